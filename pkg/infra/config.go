package infra

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"
	"sigs.k8s.io/yaml"
)

// ConfigLoader is what a plugin's Deps carry to read the plugin's configuration file.
// Plugins depend on this interface, not on flags or environment variables, so tests can
// hand them a configuration directly.
type ConfigLoader interface {
	// LoadConfig parses the plugin's configuration into out, which must be a pointer to a
	// struct with JSON tags. Values already present in out are kept for keys the file does
	// not set, so callers fill out with defaults first. found is false (and err nil) when
	// the file is optional and does not exist: the defaults apply.
	LoadConfig(out any) (found bool, err error)
}

// ConfigDirEnv names the environment variable holding the directory in which default
// configuration files (<name>.conf) are looked up when neither flag nor env names one.
const ConfigDirEnv = "CONFIG_DIR"

// ConfigFile locates and parses one plugin's configuration file following the Ligato
// convention: the flag -<name>-config=<path>, else the environment variable
// <NAME>_CONFIG, else the optional file <name>.conf in $CONFIG_DIR (default ".").
// A path given by flag or environment must exist; the default file may be missing.
type ConfigFile struct {
	// Name is the plugin's config name, e.g. "contiv" for contiv.conf.
	Name string
	// Strict turns unknown keys in the file into an error instead of a warning.
	Strict bool
	// Log receives the warnings about unknown keys and the path that was loaded.
	Log logrus.FieldLogger

	flagValue string
	lookupEnv func(string) (string, bool)
}

// NewConfigFile returns the ConfigFile for the named plugin and registers its
// -<name>-config flag on fs (when fs is not nil).
func NewConfigFile(fs *flag.FlagSet, name string) *ConfigFile {
	c := &ConfigFile{Name: name, lookupEnv: os.LookupEnv}
	if fs != nil {
		fs.StringVar(&c.flagValue, c.FlagName(), "",
			fmt.Sprintf("path to the %s configuration file (env %s)", name, c.EnvName()))
	}
	return c
}

// FlagName is the name of the command-line flag that names this configuration file.
func (c *ConfigFile) FlagName() string { return c.Name + "-config" }

// EnvName is the environment variable that names this configuration file.
func (c *ConfigFile) EnvName() string {
	return strings.ToUpper(strings.ReplaceAll(c.Name, "-", "_")) + "_CONFIG"
}

// Path returns the file to read and whether it was named explicitly (by flag or
// environment), in which case it must exist.
func (c *ConfigFile) Path() (path string, explicit bool) {
	if c.flagValue != "" {
		return c.flagValue, true
	}
	lookup := c.lookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if p, ok := lookup(c.EnvName()); ok && p != "" {
		return p, true
	}
	dir, ok := lookup(ConfigDirEnv)
	if !ok || dir == "" {
		dir = "."
	}
	return filepath.Join(dir, c.Name+".conf"), false
}

// LoadConfig implements ConfigLoader.
func (c *ConfigFile) LoadConfig(out any) (bool, error) {
	path, explicit := c.Path()
	data, err := ReadFileBounded(path, MaxConfigFileSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return false, nil
		}
		return false, fmt.Errorf("%s config: %w", c.Name, err)
	}
	if err := ParseConfig(data, out, c.Strict, c.logger().WithField("file", path)); err != nil {
		return false, fmt.Errorf("%s config %s: %w", c.Name, path, err)
	}
	c.logger().WithField("file", path).Debugf("loaded %s configuration", c.Name)
	return true, nil
}

func (c *ConfigFile) logger() logrus.FieldLogger {
	return LoggerOr(c.Log, "config")
}

// ParseConfig parses YAML (or JSON) data into out through out's JSON tags, the way
// Kubernetes tools do: key case is forgiving, as with encoding/json. Unknown keys are
// an error when strict is set and a warning on log otherwise; either way every unknown
// key is named with its full path (for example "ipamConfig.podSubnetCIRD"). Whatever
// strict says, a key given twice and a YAML 1.1 boolean such as off or yes are errors
// naming the line (CheckStrictYAML): they used to be read silently (last wins, false).
func ParseConfig(data []byte, out any, strict bool, log logrus.FieldLogger) error {
	if err := CheckStrictYAML(data); err != nil {
		return err
	}
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	unknown, err := UnknownKeys(jsonData, out)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		if strict {
			return fmt.Errorf("unknown keys: %s", strings.Join(unknown, ", "))
		}
		if log != nil {
			for _, k := range unknown {
				log.WithField("key", k).Warn("unknown configuration key ignored")
			}
		}
	}
	if err := yaml.Unmarshal(data, out); err != nil {
		return fmt.Errorf("invalid value: %w", err)
	}
	return nil
}

// StaticConfig is a ConfigLoader that hands out fixed values instead of reading a file,
// for configuration that the program computes itself (e.g. the etcd endpoint of the
// standalone mode). Its keys are the JSON names of the target struct; keys the target
// does not have are an error, so a typo cannot pass silently.
type StaticConfig map[string]any

// LoadConfig implements ConfigLoader.
func (s StaticConfig) LoadConfig(out any) (bool, error) {
	data, err := json.Marshal(map[string]any(s))
	if err != nil {
		return false, fmt.Errorf("static config: %w", err)
	}
	if err := ParseConfig(data, out, true, nil); err != nil {
		return false, fmt.Errorf("static config: %w", err)
	}
	return true, nil
}

// MaxConfigFileSize bounds the read of a configuration file: the largest real one is a
// few kilobytes; /dev/zero or a wrong path to a large file fails at once.
const MaxConfigFileSize = 1 << 20

// ReadFileBounded reads the file at path, failing as soon as it holds more than limit
// bytes (a device such as /dev/zero never ends).
func ReadFileBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a configuration file", path, limit)
	}
	return data, nil
}
