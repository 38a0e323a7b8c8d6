package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
)

// usageHeader opens the -help text, before the list of flags.
const usageHeader = `Usage: contiv-agent [flags]

The Contiv-VPP node agent. On a node it runs beside VPP in the contiv-vswitch pod,
configured by files (-<name>-config, <NAME>_CONFIG or <name>.conf in $CONFIG_DIR).
-standalone runs it on one machine with an embedded etcd and the VPP simulator:
` + "`make run`" + ` does that with the demo cluster (README.md, "5-minute tour").

Flags:
`

// parseFlags parses args into fs. The text the flag package prints goes to stdout when
// help was asked for (-h, -help: so that "contiv-agent -help | less" works) and to
// stderr for a wrong flag. It returns flag.ErrHelp after help.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var text bytes.Buffer
	fs.SetOutput(&text)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	fs.SetOutput(stderr) // later messages about flags (none today) go to stderr
	out := stderr
	if errors.Is(err, flag.ErrHelp) {
		out = stdout
	}
	_, _ = text.WriteTo(out) // nothing when the flags parsed
	return err
}

// failLogged is fail for an error the agent has logged already (a plugin that did not
// start): it only repeats it on stderr as the last line.
func failLogged(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "contiv-agent: %v\n", err)
	return 1
}
