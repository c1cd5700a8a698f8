package gitstore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidPath reports whether p is a path the store accepts for a file or a
// directory: relative, '/'-separated, no empty, "." or ".." component, no
// component that git treats as ".git" (in any case, and the NTFS/HFS+
// spellings git fsck rejects: ".git.", "git~1", ".g\u200cit", ...), no NUL and
// no backslash. The root directory "" is not a ValidPath (List and Walk accept
// it separately).
func ValidPath(p string) bool {
	return checkPath(p) == nil
}

// checkPath returns a description of what is wrong with p, or nil.
func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	if p[0] == '/' {
		return fmt.Errorf("absolute path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("NUL byte")
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return fmt.Errorf("backslash")
	}
	for rest := p; ; {
		comp, tail, more := strings.Cut(rest, "/")
		switch {
		case comp == "":
			return fmt.Errorf("empty component")
		case comp == "." || comp == "..":
			return fmt.Errorf("%q component", comp)
		case isDotGit(comp):
			return fmt.Errorf("reserved component %q", comp)
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// pathError wraps ErrInvalidPath, naming the path.
func pathError(p string, why error) error {
	return fmt.Errorf("%w %q: %v", ErrInvalidPath, p, why)
}

// validatePath returns nil or an error wrapping ErrInvalidPath.
func validatePath(p string) error {
	if err := checkPath(p); err != nil {
		return pathError(p, err)
	}
	return nil
}

// validateDir is validatePath, except that "" (the root) is accepted.
func validateDir(dir string) error {
	if dir == "" {
		return nil
	}
	return validatePath(dir)
}

// isDotGit reports whether a path component would be taken for ".git" by
// git itself on some file system: case-insensitively, ignoring trailing
// dots and spaces and NTFS stream suffixes (".git::$INDEX_ALLOCATION"), the
// NTFS short name "git~1", and HFS+ ignorable code points.
func isDotGit(comp string) bool {
	if len(comp) < 4 {
		return false
	}
	s := stripHFSIgnorable(comp)
	for _, prefix := range [...]string{".git", "git~1"} {
		if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
			continue
		}
		rest := strings.TrimLeft(s[len(prefix):], ". ")
		if rest == "" || rest[0] == ':' {
			return true
		}
	}
	return false
}

// stripHFSIgnorable removes the code points HFS+ ignores when comparing
// names (the set git's is_hfs_dotgit skips).
func stripHFSIgnorable(s string) string {
	if !strings.ContainsAny(s, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c\u206d\u206e\u206f\ufeff") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e,
			r >= 0x206a && r <= 0x206f,
			r == 0xfeff:
			if n > 1 {
				i += n
				continue
			}
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// splitPath splits a validated path into its components.
func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
