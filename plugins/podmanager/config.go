package podmanager

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Defaults of Config.
const (
	// DefaultSocketPath is where the agent serves the Remote CNI API.
	DefaultSocketPath = "/var/run/contiv/cni.sock"
	// DefaultStateFile is where the local pods are persisted. /var/run is a tmpfs: a node
	// reboot, which ends every pod sandbox, also forgets the pods.
	DefaultStateFile = "/var/run/contiv/pods.json"
	// DefaultRequestTimeout bounds how long one CNI request waits for its events.
	DefaultRequestTimeout = 60 * time.Second
	// DefaultMaxClockSkew is the default of Config.MaxClockSkew.
	DefaultMaxClockSkew = time.Minute
)

// Config is the content of podmanager.conf.
type Config struct {
	// SocketPath is the unix socket of the Remote CNI API; its directory is created and
	// a stale socket left by a previous agent is removed.
	SocketPath string `json:"socketPath"`
	// StateFile is the JSON file in which the local pods are kept across agent restarts;
	// empty disables the persistence (and so the restart recovery).
	StateFile string `json:"stateFile"`
	// CNICacheDir is the container runtime's CNI result cache (libcni's, which containerd,
	// CRI-O and cnitool keep until the DEL). At start the pods it holds for this agent
	// (contiv-cni with this socketPath) that the state file lacks are recovered from it,
	// so a lost or stale state file does not make the agent forget running pods. Empty
	// disables it.
	CNICacheDir string `json:"cniCacheDir"`
	// RequestTimeout bounds how long one CNI request waits for the event loop to process
	// its events (the delete of an obsolete pod and the add count together). Written as
	// nanoseconds or as a Go duration string ("60s").
	RequestTimeout Duration `json:"requestTimeout"`
	// MaxClockSkew is how far this node's clock and contiv-ksr's may differ (plus how
	// far the API server's list, served from its watch cache, may lag). A pod that
	// Kubernetes' copy lacks is dropped only when contiv-ksr's sync marker proves the
	// copy complete as of more than this after the pod's ADD (see the package
	// documentation); a larger value only delays that. Written like RequestTimeout.
	MaxClockSkew Duration `json:"maxClockSkew"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		SocketPath:     DefaultSocketPath,
		StateFile:      DefaultStateFile,
		CNICacheDir:    DefaultCNICacheDir,
		RequestTimeout: Duration(DefaultRequestTimeout),
		MaxClockSkew:   Duration(DefaultMaxClockSkew),
	}
}

// Validate checks every field and names the bad ones.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.SocketPath == "":
		errs = append(errs, errors.New("socketPath: must not be empty"))
	case !filepath.IsAbs(c.SocketPath):
		errs = append(errs, fmt.Errorf("socketPath %q: must be an absolute path", c.SocketPath))
	case len(c.SocketPath) > maxSocketPathLen:
		errs = append(errs, fmt.Errorf("socketPath %q: longer than %d bytes, too long for a unix socket", c.SocketPath, maxSocketPathLen))
	}
	if c.StateFile != "" && !filepath.IsAbs(c.StateFile) {
		errs = append(errs, fmt.Errorf("stateFile %q: must be an absolute path (or empty to disable)", c.StateFile))
	}
	if c.CNICacheDir != "" && !filepath.IsAbs(c.CNICacheDir) {
		errs = append(errs, fmt.Errorf("cniCacheDir %q: must be an absolute path (or empty to disable)", c.CNICacheDir))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("requestTimeout %v: must be positive", time.Duration(c.RequestTimeout)))
	}
	if c.MaxClockSkew < 0 {
		errs = append(errs, fmt.Errorf("maxClockSkew %v: must not be negative", time.Duration(c.MaxClockSkew)))
	}
	return errors.Join(errs...)
}

// maxSocketPathLen is the longest path a unix socket address holds (sun_path less the
// terminating zero).
const maxSocketPathLen = 107

// Duration is a duration in the configuration file: nanoseconds or a string like "5s".
type Duration = infra.Duration
