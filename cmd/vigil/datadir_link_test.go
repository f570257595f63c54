package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestPermDataDirSymlink: an agent.data_dir that is a symbolic link to a
// 0755 directory stops `vigil run` (exit 1) with an error naming
// agent.data_dir and the link's target; the target keeps its mode and
// gets no store. With a trailing slash too, which would make a stat
// follow the link.
func TestPermDataDirSymlink(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	for _, suffix := range []string{"", "/"} {
		t.Run("data_dir=link"+suffix, func(t *testing.T) {
			root := t.TempDir()
			victim := filepath.Join(root, "victim")
			if err := os.Mkdir(victim, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(victim, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(root, "data6")
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			out, code := runCLIWithin(t, 10*time.Second, "run", "-c", writeConfig(t, healthzConfig(link+suffix, o.URL())))
			if code != 1 {
				t.Errorf("vigil run: exit %d, want 1", code)
			}
			for _, want := range []string{"agent.data_dir: " + link + " is a symbolic link to " + victim, "point agent.data_dir at the real directory"} {
				if !strings.Contains(out, want) {
					t.Errorf("vigil run output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "its mode is now 0700") {
				t.Errorf("vigil run logged a chmod through the link:\n%s", out)
			}
			fi, err := os.Stat(victim)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != 0o755 {
				t.Errorf("link target: mode %#o after vigil run, want 0755 unchanged", got)
			}
			if _, err := os.Stat(filepath.Join(victim, "vigil.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("link target holds a store (stat vigil.db: %v)", err)
			}
		})
	}
}

// TestPermDataDirOtherOwner: run as root, vigil refuses an agent.data_dir
// owned by another user, naming the owner and the path, whatever the
// directory's mode, and leaves the mode as it was. A directory root owns is
// still used.
func TestPermDataDirOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root: only a root process can give a directory to another user, and only root refuses one")
	}
	o := checktest.NewOrigin()
	defer o.Close()
	const nobody = 65534
	for _, mode := range []os.FileMode{0o755, 0o700} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadConfig(writeConfig(t, healthzConfig(dir, o.URL())), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			a, err := newApp(cfg, appOptions{roles: roles{canary: true, page: true}, log: slog.New(slog.DiscardHandler)})
			if err == nil {
				a.close(context.Background())
				t.Fatalf("newApp accepted a data dir owned by uid %d", nobody)
			}
			for _, want := range []string{"agent.data_dir: " + dir + " is owned by ", "uid 65534", "not root"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != mode {
				t.Errorf("refused data dir: mode %#o, want %#o unchanged", got, mode)
			}
			if _, err := os.Stat(filepath.Join(dir, "vigil.db")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("refused data dir holds a store (stat vigil.db: %v)", err)
			}
			// Given back to root, it is used (and tightened).
			if err := os.Chown(dir, 0, 0); err != nil {
				t.Fatal(err)
			}
			a, err = newApp(cfg, appOptions{roles: roles{canary: true, page: true}, log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("data dir owned by root: %v", err)
			}
			a.close(context.Background())
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("data dir owned by root: stat %v, err %v; want mode 0700", fi.Mode().Perm(), err)
			}
		})
	}
}

// runCLIWithin is runCLI for a command that would run until stopped (vigil
// run): after limit its context ends, so a command that should have
// refused to start stops instead of hanging the test.
func runCLIWithin(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if ctx.Err() != nil {
		t.Errorf("vigil %s was still running after %s", strings.Join(args, " "), limit)
	}
	var ee *exitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		if ee.err != nil {
			out.WriteString(ee.err.Error())
		}
		return out.String(), ee.code
	default:
		out.WriteString(err.Error())
		return out.String(), 2
	}
}
