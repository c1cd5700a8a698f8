package gitstore

// Object folders named by the environment, read-only. Git hands a
// pre-receive (or update) hook the objects of the push in a quarantine
// folder: GIT_OBJECT_DIRECTORY names it (GIT_QUARANTINE_PATH too) and
// GIT_ALTERNATE_OBJECT_DIRECTORIES the repository's own objects folder;
// only once every hook accepted the push does git move them into the
// repository. gitstore reads objects itself (loose objects and packs), so
// a loopx run from such a hook looks in these folders too, after the
// repository's own: every loose object and every pack in them is readable.
// They are never written to: gitstore's writes go to the repository's
// objects folder as always, and "has" (which lets a write skip an object
// that exists) ignores them, so nothing written depends on an object that
// git may throw away with a refused push.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// envObjectDirs returns the object folders the environment names
// (GIT_OBJECT_DIRECTORY, then each of GIT_ALTERNATE_OBJECT_DIRECTORIES),
// absolute, without objDir itself or repeats.
func envObjectDirs(objDir string) []string {
	var dirs []string
	seen := map[string]bool{filepath.Clean(objDir): true}
	add := func(d string) {
		if d == "" {
			return
		}
		abs, err := filepath.Abs(d)
		if err != nil || seen[abs] {
			return
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return
		}
		seen[abs] = true
		dirs = append(dirs, abs)
	}
	add(os.Getenv("GIT_OBJECT_DIRECTORY"))
	for _, d := range splitAlternates(os.Getenv("GIT_ALTERNATE_OBJECT_DIRECTORIES")) {
		add(d)
	}
	return dirs
}

// splitAlternates splits a GIT_ALTERNATE_OBJECT_DIRECTORIES value as git
// does: entries separated by ':', an entry starting with '"' being a
// C-style quoted string (so it may hold ':').
func splitAlternates(v string) []string {
	var out []string
	for v != "" {
		if v[0] == '"' {
			// The closing quote: the first '"' not escaped by '\'.
			end := -1
			for i := 1; i < len(v); i++ {
				if v[i] == '\\' {
					i++
					continue
				}
				if v[i] == '"' {
					end = i
					break
				}
			}
			if end > 0 {
				if s, err := strconv.Unquote(v[:end+1]); err == nil {
					out = append(out, s)
				}
				v = strings.TrimPrefix(v[end+1:], ":")
				continue
			}
		}
		entry, rest, _ := strings.Cut(v, ":")
		out = append(out, entry)
		v = rest
	}
	return out
}
