package main

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"
)

// privateDataDir creates agent.data_dir with mode 0700: it holds the store,
// the alert state, the InfluxDB outbox and screenshots of logged-in pages,
// none of which other local users should read. A data dir made by an older
// version (0755) is tightened to 0700 when this user owns it, and the change
// is logged; one owned by someone else is left alone with a warning.
func privateDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	was := fmt.Sprintf("%#o", perm)
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		log.Warn("agent.data_dir is open to other users and not owned by this user; left as it is", "dir", dir, "mode", was)
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		log.Warn("agent.data_dir is open to other users and could not be made private", "dir", dir, "mode", was, "error", err)
		return nil
	}
	log.Info("agent.data_dir was open to other users; its mode is now 0700", "dir", dir, "was", was)
	return nil
}
