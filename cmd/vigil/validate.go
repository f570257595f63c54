package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-synthetics/vigil/proxy"
)

func init() { commands = append(commands, newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate [-c] FILE",
		Short: "Check a config file: prints ok, or every error with its line and key path (exit 2)",
		// The file as -c FILE or, as promtool and amtool take theirs, as
		// the one argument.
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("config") && file != args[0] {
					return &exitError{code: 2, err: fmt.Errorf("two config files: -c %s and %s: pass one", file, args[0])}
				}
				file = args[0]
			}
			// Errors first, then warnings, each in file order: the errors
			// must be fixed, the warnings are advice.
			f, warns, err := loadConfigWarnings(file, os.LookupEnv, os.Environ())
			printWarnings := func() {
				for _, w := range warns {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+w.text)
				}
			}
			var le *LoadError
			if errors.As(err, &le) {
				// A syntax error with its line shown and a caret under
				// its column.
				fmt.Fprintln(cmd.ErrOrStderr(), le.Report())
				printWarnings()
				return &exitError{code: 2}
			}
			if err != nil {
				printWarnings()
				return &exitError{code: 2, err: err}
			}
			// What `vigil run` would refuse about the data dir itself (a
			// file, a symbolic link); not whether another process holds
			// it. What only vigil running as root refuses (a data dir or a
			// directory on the way another user controls) is a warning:
			// it depends on who runs validate and from where (config
			// management validates as root for an agent that runs as its
			// own user; a root CI job checks out as another uid), not on
			// the file.
			key := dataDirKey(os.LookupEnv)
			rootErr, err := checkDataDir("agent.data_dir", f.Agent.DataDir)
			if err != nil {
				// At the line of agent.data_dir, unless an override set
				// it (an empty one too: the default applies).
				where := file
				if _, set := os.LookupEnv("VIGIL_AGENT_DATA_DIR"); !set {
					where = f.at(key + ":")
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s: %v\n", where, key, err)
				printWarnings()
				return &exitError{code: 2}
			}
			if rootErr != nil {
				warns = append(warns, f.warn(fmt.Sprintf("%s: refused when vigil runs as root: %v", key, rootErr)))
			}
			// A warning, not an error: validate often runs in CI, on a
			// machine without the browser the agent's host has.
			if err := checkExecPath(f.Agent.Browser.ExecPath); err != nil {
				warns = append(warns, f.warn(fmt.Sprintf("agent.browser.exec_path: %v", err)))
			}
			// The open-file limit max_client_conns needs, against the one
			// a vigil started from here would get: a warning, as the
			// service may run with another (a unit's LimitNOFILE=). The
			// proxy warns again at start with its own.
			if f.Proxy != nil {
				if w := proxy.OpenFileLimitWarning(f.Proxy.MaxClientConns, validateFileLimit()); w != "" {
					warns = append(warns, f.warn("proxy."+w))
				}
			}
			// A script reads ${env:NAME} at each run: one not set here
			// (where validate runs, often the agent's own host) fails every
			// run until the agent's environment has it.
			for i := range f.Checks {
				for _, v := range f.Checks[i].Script.EnvVars() {
					if _, ok := os.LookupEnv(v.Name); !ok {
						warns = append(warns, f.warn(fmt.Sprintf("checks[%d].script%s: ${env:%s}: environment variable not set where vigil validate runs: every run of the check fails with \"environment variable %s is not set\" until the agent's environment sets it",
							i, v.Key, v.Name, v.Name)))
					}
				}
			}
			sortWarnings(warns)
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			printWarnings()
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "vigil.yaml", "config file")
	return cmd
}

// validateFileLimit reads the open-file limit validate holds
// proxy.max_client_conns against: this process's, which a vigil started
// from the same shell gets too. The package's tests set it to unknown (0),
// so that what they expect validate to print does not depend on the
// machine's limit; withFileLimit restores it.
var validateFileLimit = proxy.OpenFileLimit

// checkExecPath reports an agent.browser.exec_path that names no executable
// file on the machine running `vigil validate` (a path that does not exist,
// a directory, a file without execute permission, or a name not on PATH).
// An empty exec_path (auto-detect) is not checked. The agent resolves the
// path again where it runs; a missing browser there fails browser runs with
// cause browser_unavailable.
func checkExecPath(p string) error {
	if p == "" {
		return nil
	}
	const where = "on this machine (checked where vigil validate runs; the agent needs it where the agent runs)"
	if !strings.Contains(p, "/") {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s: not found in PATH %s", p, where)
		}
		return nil
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil && os.IsNotExist(err):
		return fmt.Errorf("%s: no such file %s", p, where)
	case err != nil:
		return fmt.Errorf("%s: %v %s", p, unwrapPathError(err), where)
	case fi.IsDir():
		return fmt.Errorf("%s: is a directory, not a program, %s", p, where)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s: not executable (mode %#o) %s", p, fi.Mode().Perm(), where)
	}
	return nil
}

// unwrapPathError drops the operation and path of a *fs.PathError, which
// the message already names.
func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// rootDataDirCheck, where set (Unix), returns what vigil running as root
// refuses about the data dir dir (clean) before using it: a directory on
// the way another user controls, or a data dir another user owns; nil when
// not running as root.
var rootDataDirCheck func(key, dir string) error

// dataDirKey is how validate names agent.data_dir in its messages: with
// the environment override that set it, as the loader names every key an
// override set ("agent.data_dir (from VIGIL_AGENT_DATA_DIR)"). An empty
// override leaves the default in place, so it is not named.
func dataDirKey(env func(string) (string, bool)) string {
	const key, name = "agent.data_dir", "VIGIL_AGENT_DATA_DIR"
	if v, ok := env(name); ok && v != "" {
		return key + " (from " + name + ")"
	}
	return key
}

// checkDataDir reports what `vigil run` would refuse about the data dir
// dir without changing anything. err is what run refuses whoever runs it,
// with run's message: a path that is not a directory (a file, or one on
// the way), a symbolic link. rootErr is what run refuses only when it
// runs as root, checked as the user running this (a directory another user
// controls; see rootOnlyAncestors), nil when that is not root. A data dir
// that does not exist yet is fine (run creates it). Whether another
// process uses it is not checked: that depends on the moment, not on the
// file.
func checkDataDir(key, dir string) (rootErr, err error) {
	dir = filepath.Clean(dir)
	if rootDataDirCheck != nil {
		rootErr = rootDataDirCheck(key, dir)
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rootErr, nil
	case err != nil:
		// Run goes on to open the path (O_NOFOLLOW|O_DIRECTORY), which
		// fails the same way: say it as run does ("open a/b: not a
		// directory" for a data dir under a file, not "lstat …").
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return rootErr, &fs.PathError{Op: "open", Path: dir, Err: pe.Err}
		}
		return rootErr, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return rootErr, dataDirLinkError(key, dir)
	case !fi.IsDir():
		return rootErr, fmt.Errorf("open %s: not a directory", dir)
	}
	return rootErr, nil
}

// dataDirLinkError is the error for a data dir dir that is a symbolic
// link, which vigil refuses rather than follows.
func dataDirLinkError(key, dir string) error {
	target, _ := os.Readlink(dir)
	return fmt.Errorf("%s is a symbolic link to %s; vigil does not follow it: point %s at the real directory", dir, target, key)
}
