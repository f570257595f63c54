package main

import (
	"fmt"
	"os"

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
			if _, err := loadConfigWarn(file, os.LookupEnv, os.Environ(), warn); err != nil {
				return &exitError{code: 2, err: err}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "vigil.yaml", "config file")
	return cmd
}
