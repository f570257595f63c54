//go:build unix

package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestPermDataDirAncestor: run as root, vigil refuses an agent.data_dir
// below a directory another user could rename it in (owned by another
// user, or writable by others without the sticky bit, or reached through a
// link another user owns), naming the key, that directory, its owner and
// mode, before creating anything; the user could otherwise swap the data
// dir for a link root would write through. Directories that only root can
// change are accepted, sticky world-writable ones (/tmp) and root's links
// on the way (/var/run -> /run) included.
func TestPermDataDirAncestor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root: the ancestor check only runs as root, and only root can give a directory to another user")
	}
	o := checktest.NewOrigin()
	defer o.Close()
	const nobody = 65534
	mkdir := func(t *testing.T, path string, mode os.FileMode, uid, gid int) {
		t.Helper()
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// setup makes the directories under root and returns the data dir
		// and, when it must be refused, the directory to name and what the
		// error must say of it.
		setup func(t *testing.T, root string) (dir, bad string, want []string)
	}{
		{"ancestor owned by uid 65534", func(t *testing.T, root string) (string, string, []string) {
			parent := filepath.Join(root, "parent")
			mkdir(t, parent, 0o755, nobody, nobody)
			return filepath.Join(parent, "data"), parent, []string{"another user owns (owner ", "uid 65534), mode 0755)", "chown it to root"}
		}},
		{"grandparent owned by uid 65534", func(t *testing.T, root string) (string, string, []string) {
			gp := filepath.Join(root, "gp")
			mkdir(t, gp, 0o755, nobody, nobody)
			mkdir(t, filepath.Join(gp, "parent"), 0o755, 0, 0)
			return filepath.Join(gp, "parent", "data"), gp, []string{"another user owns (owner ", "uid 65534), mode 0755)"}
		}},
		{"ancestor 0777 without sticky bit", func(t *testing.T, root string) (string, string, []string) {
			parent := filepath.Join(root, "open")
			mkdir(t, parent, 0o777, 0, 0)
			return filepath.Join(parent, "data"), parent, []string{"every user may write to, without the sticky bit (owner root (uid 0), mode 0777)", "chmod o-w (or +t) it"}
		}},
		{"ancestor group-writable by gid 65534", func(t *testing.T, root string) (string, string, []string) {
			parent := filepath.Join(root, "shared")
			mkdir(t, parent, 0o775, 0, nobody)
			return filepath.Join(parent, "data"), parent, []string{"gid 65534) may write to, without the sticky bit (owner root (uid 0), mode 0775)", "chmod g-w (or +t) it"}
		}},
		{"link to a directory owned by uid 65534", func(t *testing.T, root string) (string, string, []string) {
			real := filepath.Join(root, "real")
			mkdir(t, real, 0o755, nobody, nobody)
			if err := os.Symlink(real, filepath.Join(root, "run")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(root, "run", "data"), real, []string{"another user owns (owner ", "uid 65534), mode 0755)"}
		}},
		{"link owned by uid 65534", func(t *testing.T, root string) (string, string, []string) {
			real := filepath.Join(root, "real")
			mkdir(t, real, 0o755, 0, 0)
			link := filepath.Join(root, "run")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "data"), link, []string{"is a symbolic link another user owns (owner ", "uid 65534), mode 0777)"}
		}},
		{"sticky world-writable ancestor (like /tmp)", func(t *testing.T, root string) (string, string, []string) {
			parent := filepath.Join(root, "tmp")
			mkdir(t, parent, 0o777|os.ModeSticky, 0, 0)
			return filepath.Join(parent, "data"), "", nil
		}},
		{"root-owned 0755 ancestors", func(t *testing.T, root string) (string, string, []string) {
			mkdir(t, filepath.Join(root, "var"), 0o755, 0, 0)
			mkdir(t, filepath.Join(root, "var", "lib"), 0o755, 0, 0)
			return filepath.Join(root, "var", "lib", "vigil"), "", nil
		}},
		{"root's relative link on the way (like /var/run -> ../run)", func(t *testing.T, root string) (string, string, []string) {
			mkdir(t, filepath.Join(root, "run"), 0o755, 0, 0)
			mkdir(t, filepath.Join(root, "var"), 0o755, 0, 0)
			if err := os.Symlink("../run", filepath.Join(root, "var", "run")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(root, "var", "run", "vigil", "data"), "", nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir, bad, want := tc.setup(t, root)
			cfg, err := loadConfig(writeConfig(t, healthzConfig(dir, o.URL())), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			a, err := newApp(cfg, appOptions{roles: roles{canary: true, page: true}, log: slog.New(slog.DiscardHandler)})
			if bad == "" {
				if err != nil {
					t.Fatalf("data dir %s refused: %v", dir, err)
				}
				a.close(context.Background())
				fi, err := os.Lstat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || fi.Mode().Perm() != 0o700 || st.Uid != 0 {
					t.Errorf("data dir %s: %v owned by uid %d, want a directory 0700 owned by root", dir, fi.Mode(), st.Uid)
				}
				return
			}
			if err == nil {
				a.close(context.Background())
				t.Fatalf("newApp accepted data dir %s below %s", dir, bad)
			}
			for _, w := range append([]string{"agent.data_dir: " + dir + " is inside " + bad + ", which ", "point agent.data_dir at a directory under root-owned ones"}, want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("refused data dir %s was created (lstat: %v)", dir, err)
			}
		})
	}
}

// TestPermDataDirAncestorRun: the swap the check prevents, end to end. As
// root, `vigil run` with its data dir in a directory uid 65534 owns exits 1
// naming that directory, and creates nothing there that the owner could
// swap for a link.
func TestPermDataDirAncestorRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root: the ancestor check only runs as root")
	}
	o := checktest.NewOrigin()
	defer o.Close()
	parent := filepath.Join(t.TempDir(), "parent")
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(parent, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "data")
	out, code := runCLIWithin(t, 10*time.Second, "run", "-c", writeConfig(t, healthzConfig(dir, o.URL())))
	if code != 1 {
		t.Errorf("vigil run: exit %d, want 1", code)
	}
	if want := "agent.data_dir: " + dir + " is inside " + parent + ", which another user owns"; !strings.Contains(out, want) {
		t.Errorf("vigil run output lacks %q:\n%s", want, out)
	}
	if entries, err := os.ReadDir(parent); err != nil || len(entries) != 0 {
		t.Errorf("%s after a refused vigil run: %v (err %v), want empty", parent, entries, err)
	}
}

// TestPermDataDirAncestorDemoDefault: `make demo` runs `vigil demo` from the
// checkout with its default --data-dir ./vigil-data/demo; run as root from a
// checkout root owns, every directory on that relative path is accepted.
func TestPermDataDirAncestorDemoDefault(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root: the ancestor check only runs as root")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(repo); err != nil {
		t.Fatal(err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Skipf("SKIP: checkout %s is owned by uid %d, not root: vigil demo run as root from it is refused, as it should be", repo, st.Uid)
	}
	t.Chdir(repo)
	def := newDemoCmd().Flags().Lookup("data-dir").DefValue
	if def != "./vigil-data/demo" {
		t.Errorf("vigil demo --data-dir defaults to %q; this test checks ./vigil-data/demo", def)
	}
	if err := rootOnlyAncestors("--data-dir", filepath.Clean(def)); err != nil {
		t.Errorf("make demo from %s as root: %v", repo, err)
	}
}

// TestPermDataDirAncestorKey: the demo's data dir is named by its flag, so
// the error says which flag to change rather than agent.data_dir.
func TestPermDataDirAncestorKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root: the ancestor check only runs as root")
	}
	parent := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	err := prepareDataDir("--data-dir", filepath.Join(parent, "demo"), slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "point --data-dir at a directory under root-owned ones") || strings.Contains(err.Error(), "agent.data_dir") {
		t.Errorf("prepareDataDir(--data-dir): %v; want it to name --data-dir only", err)
	}
}
