package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"syscall"
)

// privateDataDir creates agent.data_dir with mode 0700: it holds the store,
// the alert state, the InfluxDB outbox and screenshots of logged-in pages,
// none of which other local users should read. A data dir made by an older
// version (0755) is tightened to 0700 when this user owns it, and the change
// is logged; one owned by someone else is left alone with a warning, or
// refused when vigil runs as root (the owner could plant links in it that
// root would then write through).
//
// A data_dir that is a symbolic link is refused rather than followed: the
// chmod would otherwise land on whatever the link names (run as root with
// data_dir in a world-writable directory, a planted link to /etc would make
// /etc 0700). The directory is opened with O_NOFOLLOW and its mode changed
// through that descriptor, so a link swapped in after the check is not
// followed either.
func privateDataDir(dir string, log *slog.Logger) error {
	// Clean drops a trailing slash, with which Lstat would follow a link.
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(dir)
			return fmt.Errorf("%s is a symbolic link to %s; vigil does not follow it: point agent.data_dir at the real directory", dir, target)
		}
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	owned := ok && int(st.Uid) == os.Geteuid()
	if !owned && os.Geteuid() == 0 {
		return fmt.Errorf("%s is owned by %s, not root: vigil running as root does not use a directory another user controls; chown it to root or point agent.data_dir at a directory root owns", dir, ownerName(st))
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	was := fmt.Sprintf("%#o", perm)
	if !owned {
		log.Warn("agent.data_dir is open to other users and not owned by this user; left as it is", "dir", dir, "mode", was)
		return nil
	}
	if err := d.Chmod(0o700); err != nil {
		log.Warn("agent.data_dir is open to other users and could not be made private", "dir", dir, "mode", was, "error", err)
		return nil
	}
	log.Info("agent.data_dir was open to other users; its mode is now 0700", "dir", dir, "was", was)
	return nil
}

// ownerName is "name (uid N)" for the owner in st, or "uid N" when the
// name is unknown.
func ownerName(st *syscall.Stat_t) string {
	if st == nil {
		return "another user"
	}
	uid := fmt.Sprint(st.Uid)
	if u, err := user.LookupId(uid); err == nil && u.Username != "" {
		return fmt.Sprintf("%s (uid %s)", u.Username, uid)
	}
	return "uid " + uid
}
