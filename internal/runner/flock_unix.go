//go:build unix

package runner

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// tryFlock takes an exclusive lock on f without waiting; held reports that another open file
// description holds it.
func tryFlock(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// waitFlock takes an exclusive lock on f, waiting for it.
func waitFlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// unflock releases a lock taken on f.
func unflock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// openLockFile opens (or creates with mode) a lock file, never through a symlink: the lock
// folder is shared, and a run as root must not truncate whatever a link points to.
func openLockFile(path string, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("lock %s: not a regular file", path)
	}
	// Every user's runs share the folder's locks; the umask must not narrow that.
	if st, _ := f.Stat(); st.Mode().Perm() != mode && ownedByMe(st) {
		f.Chmod(mode)
	}
	return f, nil
}

// openLockDir makes the shared lock folder (sticky and open to every user, as /tmp is, so that
// runs of different users see each other) or checks the one there: a folder, not a link, owned
// by root or by us, and not writable by others unless sticky.
func openLockDir(dir string) error {
	if err := os.Mkdir(dir, 0o1777); err == nil {
		os.Chmod(dir, 0o1777|os.ModeSticky)
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("lock folder %s (%s): %w", dir, LockDirEnv, err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("lock folder %s (%s): %w", dir, LockDirEnv, err)
	}
	uid := st.Sys().(*syscall.Stat_t).Uid
	switch {
	case !st.IsDir():
		return fmt.Errorf("lock folder %s (%s) is not a folder (a link?): remove it or set %s", dir, LockDirEnv, LockDirEnv)
	case uid != 0 && int(uid) != os.Getuid():
		return fmt.Errorf("lock folder %s belongs to uid %d, neither root nor us: remove it or set %s", dir, uid, LockDirEnv)
	case st.Mode().Perm()&0o022 != 0 && st.Mode()&os.ModeSticky == 0:
		return fmt.Errorf("lock folder %s is writable by others without the sticky bit: chmod +t it or set %s", dir, LockDirEnv)
	}
	return nil
}

func ownedByMe(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == os.Getuid()
}
