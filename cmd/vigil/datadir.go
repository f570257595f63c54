//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
)

// privateDataDir prepares agent.data_dir (prepareDataDir with that key).
func privateDataDir(dir string, log *slog.Logger) error {
	return prepareDataDir("agent.data_dir", dir, log)
}

// prepareDataDir creates the data dir dir with mode 0700: it holds the
// store, the alert state, the InfluxDB outbox and screenshots of logged-in
// pages, none of which other local users should read. key is the setting
// that named dir (agent.data_dir, or the demo's --data-dir); its errors say
// which to change. A data dir made by an older version (0755) is tightened
// to 0700 when this user owns it, and the change is logged; one owned by
// someone else is left alone with a warning, or refused when vigil runs as
// root (the owner could plant links in it that root would then write
// through).
//
// A data dir that is a symbolic link is refused rather than followed: the
// chmod would otherwise land on whatever the link names (run as root with
// data_dir in a world-writable directory, a planted link to /etc would make
// /etc 0700). The directory is opened with O_NOFOLLOW and its mode changed
// through that descriptor, so a link swapped in after the check is not
// followed either.
//
// Run as root, every directory on the way to it must be root's too
// (rootOnlyAncestors), checked before anything is created: vigil writes
// into the data dir by path, so a user who could rename entries in one of
// them could swap the data dir for a link after the checks here.
func prepareDataDir(key, dir string, log *slog.Logger) error {
	// Clean drops a trailing slash, with which Lstat would follow a link.
	dir = filepath.Clean(dir)
	if os.Geteuid() == 0 {
		if err := rootOnlyAncestors(key, dir); err != nil {
			return err
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return dataDirLinkError(key, dir)
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
		return notRootOwnedError(key, dir, st)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	was := fmt.Sprintf("%#o", perm)
	if !owned {
		log.Warn(key+" is open to other users and not owned by this user; left as it is", "dir", dir, "mode", was)
		return nil
	}
	if err := d.Chmod(0o700); err != nil {
		log.Warn(key+" is open to other users and could not be made private", "dir", dir, "mode", was, "error", err)
		return nil
	}
	log.Info(key+" was open to other users; its mode is now 0700", "dir", dir, "was", was)
	return nil
}

func init() { rootDataDirCheck = rootDataDir }

// rootDataDir is what prepareDataDir refuses, run as root, about the data
// dir dir (clean) without creating or changing anything: a directory on
// the way another user controls (rootOnlyAncestors), or a data dir another
// user owns. nil when not running as root.
func rootDataDir(key, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := rootOnlyAncestors(key, dir); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return nil // missing (created as root), or not a directory (the caller says)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != 0 {
		return notRootOwnedError(key, dir, st)
	}
	return nil
}

// notRootOwnedError is the error for a data dir dir owned by another user
// than root, which vigil running as root refuses.
func notRootOwnedError(key, dir string, st *syscall.Stat_t) error {
	return fmt.Errorf("%s is owned by %s, not root: vigil running as root does not use a directory another user controls; chown it to root or point %s at a directory root owns", dir, ownerName(st), key)
}

// maxLinks bounds the symbolic links rootOnlyAncestors follows, as the
// kernel's ELOOP does (40 on Linux, 32 on macOS).
const maxLinks = 40

// rootOnlyAncestors, for vigil running as root, refuses the data dir dir
// (clean) when a directory on the way to it is owned by another user, or is
// writable by another user (the group bit counts unless the group is root)
// without the sticky bit: such a user could rename the data dir and put a
// link in its place, and root, writing by path, would follow it. A sticky
// world-writable directory such as /tmp is fine: there only an entry's owner
// may rename it. A relative dir is walked from the working directory.
//
// Symbolic links on the way are followed, as the kernel does, so legitimate
// ones (/var/run -> /run, macOS /tmp -> /private/tmp) are accepted when they
// and the directory they lead to are root's. Rather than checking the
// ancestors of filepath.EvalSymlinks(dir) alone, every directory a name is
// looked up in is checked, those holding the links included: a user who
// could replace /var/run could point it elsewhere. A link owned by another
// user is refused too. The data dir itself (the last name) is not followed:
// prepareDataDir opens it with O_NOFOLLOW and checks its owner. The walk
// stops at the first name that does not exist yet: MkdirAll creates the
// rest, as root.
func rootOnlyAncestors(key, dir string) error {
	var names []string
	if !filepath.IsAbs(dir) {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		names = splitPath(wd)
	}
	names = append(names, splitPath(dir)...)
	if n := len(names); n > 0 && names[n-1] != ".." {
		names = names[:n-1]
	}
	refuse := func(at, what string, fi fs.FileInfo, hint string) error {
		st, _ := fi.Sys().(*syscall.Stat_t)
		return fmt.Errorf("%s is inside %s, which %s (owner %s, mode %s): vigil running as root does not use a data dir under a directory another user controls, since that user could swap the data dir for a symbolic link root would then write through; %s, or point %s at a directory under root-owned ones",
			dir, at, what, ownerName(st), unixMode(fi.Mode()), hint, key)
	}
	cur := "/"
	fi, err := os.Lstat(cur)
	if err != nil {
		return err
	}
	if what, hint := othersControl(fi); what != "" {
		return refuse(cur, what, fi, hint)
	}
	links := 0
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		switch name {
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // checked on the way down
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
				return refuse(next, "is a symbolic link another user owns", fi, "replace it with one root owns")
			}
			if links++; links > maxLinks {
				return fmt.Errorf("%s: too many levels of symbolic links on the way to %s", dir, next)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			names = append(splitPath(target), names...)
			continue
		}
		if !fi.IsDir() {
			return nil // MkdirAll reports that it is not a directory
		}
		if what, hint := othersControl(fi); what != "" {
			return refuse(next, what, fi, hint)
		}
		cur = next
	}
	return nil
}

// othersControl says why a user other than root could rename entries in
// the directory fi, and how to fix it; "" when no one but root can.
func othersControl(fi fs.FileInfo) (what, hint string) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", ""
	}
	mode := fi.Mode()
	switch {
	case st.Uid != 0:
		return "another user owns", "chown it to root"
	case mode&fs.ModeSticky != 0:
		return "", ""
	case mode&0o002 != 0:
		return "every user may write to, without the sticky bit", "chmod o-w (or +t) it"
	case mode&0o020 != 0 && st.Gid != 0:
		return "group " + groupName(st.Gid) + " may write to, without the sticky bit", "chmod g-w (or +t) it"
	}
	return "", ""
}

// splitPath is the names in path p, without empty ones.
func splitPath(p string) []string {
	var out []string
	for _, name := range strings.Split(p, "/") {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// unixMode is m as chmod takes it: 1777 for /tmp, 0755.
func unixMode(m fs.FileMode) string {
	n := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		n |= 0o1000
	}
	if m&fs.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&fs.ModeSetuid != 0 {
		n |= 0o4000
	}
	return fmt.Sprintf("%04o", n)
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

// groupName is "name (gid N)", or "gid N" when the name is unknown.
func groupName(gid uint32) string {
	id := fmt.Sprint(gid)
	if g, err := user.LookupGroupId(id); err == nil && g.Name != "" {
		return fmt.Sprintf("%s (gid %s)", g.Name, id)
	}
	return "gid " + id
}
