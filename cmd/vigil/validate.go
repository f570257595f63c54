package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "validate -c FILE",
		Short: "Check a config file: prints ok, or every error with its key path (exit 2)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			warn := func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+msg) }
			f, err := loadConfigWarn(file, os.LookupEnv, os.Environ(), warn)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			// A warning, not an error: validate often runs in CI, on a
			// machine without the browser the agent's host has.
			if err := checkExecPath(f.Agent.Browser.ExecPath); err != nil {
				warn(fmt.Sprintf("%s: agent.browser.exec_path: %v", file, err))
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "vigil.yaml", "config file")
	return cmd
}

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
