package cniplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// latestVersion is the newest CNI spec version contiv-cni speaks; error output carries
// it when the configuration did not name a usable one.
const latestVersion = "1.1.0"

// MaxConfigSize bounds the network configuration read from stdin: a real one is a few
// kilobytes (with a prevResult); anything larger is refused before it is decoded.
const MaxConfigSize = 1 << 20

// Main runs contiv-cni: it serves the command named by CNI_COMMAND and returns the exit
// status (0, or 1 after printing the CNI error JSON to stdout). about is printed when the
// binary is run without CNI_COMMAND. The configuration on stdin is read with a bound
// (MaxConfigSize): a larger one is an invalid configuration (code 7).
func Main(about string) int {
	switch os.Getenv("CNI_COMMAND") {
	case "", "VERSION": // skel reads no stdin for these
	default:
		data, err := readBounded(os.Stdin, MaxConfigSize)
		if err != nil {
			printError(os.Stdout, latestVersion, types.NewError(types.ErrInvalidNetworkConfig,
				"contiv-cni: network configuration on stdin: "+err.Error(), ""))
			return 1
		}
		// skel reads os.Stdin itself: hand it the bounded copy through a pipe.
		r, w, err := os.Pipe()
		if err != nil {
			printError(os.Stdout, latestVersion, types.NewError(types.ErrIOFailure, "contiv-cni: stdin pipe", err.Error()))
			return 1
		}
		go func() {
			_, _ = w.Write(data)
			_ = w.Close()
		}()
		os.Stdin = r
	}
	return mainWith(skel.PluginMainFuncsWithError, about, os.Stdout)
}

// readBounded reads r to its end, failing as soon as it holds more than limit bytes.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the configuration is larger than %d bytes", limit)
	}
	return data, nil
}

// pluginMain is skel.PluginMainFuncsWithError (replaced in tests).
type pluginMain func(funcs skel.CNIFuncs, versions version.PluginInfo, about string) *types.Error

func mainWith(run pluginMain, about string, stdout io.Writer) int {
	confVersion := ""
	remember := func(f func(*skel.CmdArgs) error) func(*skel.CmdArgs) error {
		return func(args *skel.CmdArgs) error {
			confVersion = errorVersion(args.StdinData)
			return f(args)
		}
	}
	funcs := Funcs()
	funcs.Add, funcs.Del, funcs.Check = remember(funcs.Add), remember(funcs.Del), remember(funcs.Check)
	funcs.Status, funcs.GC = remember(funcs.Status), remember(funcs.GC)
	e := run(funcs, Versions(), about)
	if e == nil {
		return 0
	}
	if confVersion == "" {
		confVersion = latestVersion
	}
	printError(stdout, confVersion, e)
	return 1
}

// errorVersion is the cniVersion of a network configuration when contiv-cni supports it,
// "" otherwise.
func errorVersion(conf []byte) string {
	var c struct {
		CNIVersion string `json:"cniVersion"`
	}
	if json.Unmarshal(conf, &c) != nil {
		return ""
	}
	for _, v := range Versions().SupportedVersions() {
		if v == c.CNIVersion {
			return v
		}
	}
	return ""
}

// printError writes the CNI error JSON of the spec: cniVersion, code, msg and details.
// (The CNI library's own printer leaves out cniVersion, which the spec requires.)
func printError(w io.Writer, cniVersion string, e *types.Error) {
	out, err := json.MarshalIndent(struct {
		CNIVersion string `json:"cniVersion"`
		Code       uint   `json:"code"`
		Msg        string `json:"msg"`
		Details    string `json:"details,omitempty"`
	}{cniVersion, e.Code, e.Msg, e.Details}, "", "    ")
	if err != nil { // cannot happen with strings and a number
		out = []byte(`{"cniVersion":"` + latestVersion + `","code":999,"msg":"contiv-cni: cannot encode its error"}`)
	}
	_, _ = w.Write(append(out, '\n'))
}
