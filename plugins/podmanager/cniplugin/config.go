package cniplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/sirupsen/logrus"
)

// defaultLogFile is where requests are logged when the configuration names no logFile.
const defaultLogFile = "/tmp/contiv-cni.log"

// maxLogSize is the size from which the log file is rotated: it usually sits on a tmpfs
// (/var/run/contiv), in memory, and every pod adds a few lines to it.
const maxLogSize = 4 << 20

// openLogFile opens the log file for appending, first rotating it to <path>.1 (replacing
// the previous one) once it has reached max bytes, so that the log takes at most about
// twice max. Plugin processes run concurrently: the one that rotates holds an exclusive
// lock on the full file while it checks and renames it, and a process that finds the
// path naming another file than the one it locked (rotated meanwhile) opens the new one,
// so a fresh log is never rotated over the full backup.
func openLogFile(path string, max int64) (*os.File, error) {
	for range 3 {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() < max {
			return f, nil // the common case: no lock taken
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			return f, nil // cannot coordinate: keep appending to the full file
		}
		current, err := os.Stat(path)
		switch {
		case err == nil && !os.SameFile(fi, current):
			// Rotated by another process while we waited: open the new file.
		case err == nil:
			_ = os.Rename(path, path+".1")
		}
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
	return os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
}

// netConf is contiv-cni's network configuration.
type netConf struct {
	types.PluginConf

	// GRPCServer is the agent's address: a unix socket path if it starts with "/", else
	// TCP host:port.
	GRPCServer string `json:"grpcServer"`
	// LogFile is where requests are logged: nil means defaultLogFile, "" stderr.
	LogFile *string `json:"logFile,omitempty"`
	// EtcdEndpoints is an upstream key, accepted and unused.
	EtcdEndpoints string `json:"etcdEndpoints,omitempty"`
}

// parseConfig decodes and checks the network configuration of a command (ADD, DEL, ...).
func parseConfig(data []byte, command string) (*netConf, error) {
	conf := &netConf{}
	if err := json.Unmarshal(data, conf); err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "contiv-cni: cannot decode the network configuration", err.Error())
	}
	if conf.GRPCServer == "" {
		return conf, types.NewError(types.ErrInvalidNetworkConfig,
			"contiv-cni: the network configuration lacks grpcServer (the contiv agent's socket, e.g. /var/run/contiv/cni.sock)", "")
	}
	if err := checkServer(conf.GRPCServer); err != nil {
		return conf, types.NewError(types.ErrInvalidNetworkConfig,
			fmt.Sprintf("contiv-cni: grpcServer %q: %v", conf.GRPCServer, err), "")
	}
	if command == "ADD" && conf.RawPrevResult != nil {
		return conf, types.NewError(types.ErrInvalidNetworkConfig,
			"contiv-cni: got a prevResult on ADD; contiv-cni must be the first plugin of the chain", "")
	}
	return conf, nil
}

// checkServer checks that grpcServer is a unix socket path (absolute) or host:port with
// a port number, so that a typo is reported as a bad configuration rather than as an
// agent that cannot be reached (which the runtime would retry for ever).
func checkServer(server string) error {
	if strings.HasPrefix(server, "/") {
		return nil
	}
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return fmt.Errorf("neither a unix socket path (starting with /) nor host:port: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	if host == "" {
		return errors.New("no host before the port")
	}
	return nil
}

// logTarget returns where the configuration wants the log ("" = stderr).
func (c *netConf) logTarget() string {
	if c == nil || c.LogFile == nil {
		return defaultLogFile
	}
	return *c.LogFile
}

// openLog returns a logger writing to the configured log file (stderr when the file is
// "" or cannot be opened) and the function that closes it.
func openLog(target string, stderr io.Writer) (*logrus.Logger, func()) {
	log := logrus.New()
	log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	log.SetOutput(stderr)
	if target == "" {
		return log, func() {}
	}
	f, err := openLogFile(target, maxLogSize)
	if err != nil {
		log.WithError(err).Warnf("contiv-cni: cannot open log file %s, logging to stderr", target)
		return log, func() {}
	}
	log.SetOutput(f)
	return log, func() { _ = f.Close() }
}

// ipamType returns the type of the chained IPAM plugin ("" when none).
func (c *netConf) ipamType() string { return c.IPAM.Type }

// describe is a one-line summary of the configuration for logs.
func (c *netConf) describe() string {
	s := fmt.Sprintf("network %q cniVersion %s grpcServer %s", c.Name, c.CNIVersion, c.GRPCServer)
	if c.ipamType() != "" {
		s += " ipam " + c.ipamType()
	}
	return s
}
