package gitstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Temporary files of loopx writers. All of them are named after the
// process that made them (tmp_<kind>_loopx_<pid>_<n>), and all of them are
// made in objects/pack: packs and their indexes (packwrite.go), and loose
// objects, which are then renamed into objects/xx/ (objects.go). A killed
// writer's leftovers are thus found by one look at that one directory,
// which the next writer takes when the fence file says a writer may have
// left some (see "Dead writers' leftovers" in fence.go), and gc's hourly
// sweep (removeStaleTmpFiles) catches anything else. git's own temporary
// files (tmp_pack_XXXXXX, tmp_idx_XXXXXX, tmp_obj_XXXXXX, *.lock) never
// match these names and are never touched. A fetch's quarantine
// (tmp_fetch_loopx_<pid>_<n>, wire.go) is a folder: git writes the fetched
// objects there before loopx moves them in.
const (
	tmpPackPrefix = "tmp_pack_loopx_"
	tmpIdxPrefix  = "tmp_idx_loopx_"
	tmpObjPrefix  = "tmp_obj_loopx_"
	gcStateTmp    = gcStateFile + ".tmp" // + pid (writeGCState)
	sideTmpStart  = "loopx-side."        // + pid.n (WriteSideFile)
)

// tmpFilePid returns the pid in the name of a loopx temporary file of
// objects/pack, and whether name is one.
func tmpFilePid(name string) (int, bool) {
	for _, prefix := range []string{tmpPackPrefix, tmpIdxPrefix, tmpObjPrefix, tmpFetchPrefix} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			pidStr, _, ok := strings.Cut(rest, "_")
			pid, err := strconv.Atoi(pidStr)
			return pid, ok && err == nil && pid > 0
		}
	}
	return 0, false
}

// removeDeadTmpFiles removes the temporary files of loopx processes that
// are gone: in objects/pack (one directory read) and in the common dir
// (ref-lock twins, with the stale ref lock linked to one, GC state files
// and side files being replaced; one more directory read). It reports whether it
// saw a temporary file of a live process (a Fetch without the fence, in
// progress). Callers hold the exclusive fence, so no loopx writer that
// takes it is running; the pid check spares the writers that do not (and
// a file whose pid was reused, which gc's hourly sweep removes later).
func (s *Store) removeDeadTmpFiles() (live bool) {
	self := os.Getpid()
	packDir := filepath.Join(s.commonDir, "objects", "pack")
	for _, name := range readDirNames(packDir) {
		pid, ok := tmpFilePid(name)
		if !ok {
			continue
		}
		if pid == self || processAlive(pid) {
			live = true
			continue
		}
		os.RemoveAll(filepath.Join(packDir, name)) // a fetch's quarantine is a folder
	}
	var twins []string
	for _, name := range readDirNames(s.commonDir) {
		switch {
		case strings.HasPrefix(name, refLockTmpStart):
			twins = append(twins, filepath.Join(s.commonDir, name))
		case strings.HasPrefix(name, gcStateTmp):
			if pid, err := strconv.Atoi(strings.TrimPrefix(name, gcStateTmp)); err == nil && pid != self && !processAlive(pid) {
				os.Remove(filepath.Join(s.commonDir, name))
			}
		case strings.HasPrefix(name, sideTmpStart):
			pidStr, _, _ := strings.Cut(strings.TrimPrefix(name, sideTmpStart), ".")
			if pid, err := strconv.Atoi(pidStr); err == nil && pid != self && !processAlive(pid) {
				os.Remove(filepath.Join(s.commonDir, name))
			} else if err == nil {
				live = true
			}
		}
	}
	s.removeDeadTwins(twins)
	return live
}

// readDirNames lists a directory's names (nil if it cannot be read).
func readDirNames(dir string) []string {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	return names
}
