package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "vigil",
		Short: "Synthetic monitoring agent, canary runner and health-aware reverse proxy",
		Long: `vigil runs shallow, deep and browser-driven checks against origins from one or
more regions, judges each origin with hysteresis, stores the verdicts, alerts on SLO
breaches and routes traffic around broken origins with its bundled proxy.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version and -v, as blackbox_exporter and Prometheus take
		// them, print what `vigil version` prints.
		Version: version,
	}
	root.SetVersionTemplate("vigil {{.Version}}\n")
	for _, add := range commands {
		root.AddCommand(add())
	}
	return root
}

// commands registers every sub-command; each command's file appends itself in init.
var commands []func() *cobra.Command

func init() {
	commands = append(commands, newVersionCmd)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "vigil "+version)
		},
	}
}
