package infra

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/sirupsen/logrus"
)

// Log formats accepted by -log-format.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// LoggerField is the logrus field that carries the name of the logger a line came from.
const LoggerField = "logger"

// LogsConfig is the content of logs.conf: a default level and per-logger overrides.
type LogsConfig struct {
	// DefaultLevel applies to every logger without an override (default "info").
	DefaultLevel string `json:"default-level"`
	// Loggers overrides the level of single named loggers.
	Loggers []LoggerLevel `json:"loggers"`
}

// LoggerLevel sets the level of one named logger.
type LoggerLevel struct {
	Name  string `json:"name"`
	Level string `json:"level"`
}

// LogRegistry hands out named loggers that share one output and format but have their
// own level, so an operator can turn one plugin to debug without drowning in the rest.
type LogRegistry struct {
	mu           sync.Mutex
	out          io.Writer
	formatter    logrus.Formatter
	defaultLevel logrus.Level
	overrides    map[string]logrus.Level
	loggers      map[string]*logrus.Logger
}

// NewLogRegistry returns a registry writing to out (stderr when nil) in the given format
// ("text" or "json") at the info level.
func NewLogRegistry(out io.Writer, format string) (*LogRegistry, error) {
	if out == nil {
		out = os.Stderr
	}
	var f logrus.Formatter
	switch format {
	case "", LogFormatText:
		f = &logrus.TextFormatter{FullTimestamp: true}
	case LogFormatJSON:
		f = &logrus.JSONFormatter{}
	default:
		return nil, fmt.Errorf("log format %q: must be %q or %q", format, LogFormatText, LogFormatJSON)
	}
	return &LogRegistry{
		out:          out,
		formatter:    f,
		defaultLevel: logrus.InfoLevel,
		overrides:    make(map[string]logrus.Level),
		loggers:      make(map[string]*logrus.Logger),
	}, nil
}

// Logger returns the logger with the given name, creating it on first use. Every line
// it writes carries the field logger=<name>.
func (r *LogRegistry) Logger(name string) *logrus.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.loggers[name]
	if !ok {
		l = logrus.New()
		l.SetOutput(r.out)
		l.SetFormatter(r.formatter)
		l.SetLevel(r.levelOf(name))
		r.loggers[name] = l
	}
	return l.WithField(LoggerField, name)
}

func (r *LogRegistry) levelOf(name string) logrus.Level {
	if lvl, ok := r.overrides[name]; ok {
		return lvl
	}
	return r.defaultLevel
}

// SetDefaultLevel changes the level of every logger without an override.
func (r *LogRegistry) SetDefaultLevel(level string) error {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("default log level: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.defaultLevel = lvl
	for name, l := range r.loggers {
		l.SetLevel(r.levelOf(name))
	}
	return nil
}

// SetLevel overrides the level of one logger (which need not exist yet).
func (r *LogRegistry) SetLevel(name, level string) error {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("log level of %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overrides[name] = lvl
	if l, ok := r.loggers[name]; ok {
		l.SetLevel(lvl)
	}
	return nil
}

// Apply sets the levels of a logs.conf; it changes nothing when any level is invalid.
func (r *LogRegistry) Apply(cfg LogsConfig) error {
	if cfg.DefaultLevel != "" {
		if _, err := logrus.ParseLevel(cfg.DefaultLevel); err != nil {
			return fmt.Errorf("default-level: %q is not a log level", cfg.DefaultLevel)
		}
	}
	for i, l := range cfg.Loggers {
		if l.Name == "" {
			return fmt.Errorf("loggers[%d].name: must not be empty", i)
		}
		if _, err := logrus.ParseLevel(l.Level); err != nil {
			return fmt.Errorf("loggers[%s].level: %q is not a log level", l.Name, l.Level)
		}
	}
	if cfg.DefaultLevel != "" {
		if err := r.SetDefaultLevel(cfg.DefaultLevel); err != nil {
			return err
		}
	}
	for _, l := range cfg.Loggers {
		if err := r.SetLevel(l.Name, l.Level); err != nil {
			return err
		}
	}
	return nil
}

// Levels returns the current level of every logger created so far, by name.
func (r *LogRegistry) Levels() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.loggers))
	for name, l := range r.loggers {
		out[name] = l.GetLevel().String()
	}
	return out
}

// Names returns the names of the loggers created so far, sorted.
func (r *LogRegistry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.loggers))
	for name := range r.loggers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// LoggerOr returns log when it is not nil and otherwise the one default of every
// component handed no logger: logrus's standard logger (text on stderr at the info
// level, unless the process set it otherwise) with the field logger=<name>, the field a
// LogRegistry logger carries (none when name is empty). The binaries hand every
// component a registry logger; the default serves tests and programs that embed a
// component, which then still see its warnings. A component calls it once, where it
// resolves its dependencies, not per line.
func LoggerOr(log logrus.FieldLogger, name string) logrus.FieldLogger {
	if log != nil {
		return log
	}
	if name == "" {
		return logrus.StandardLogger()
	}
	return logrus.StandardLogger().WithField(LoggerField, name)
}

// LevelEnabled tells whether log writes entries of level; a logger that cannot say
// (neither a *logrus.Entry nor a *logrus.Logger) is taken as writing them. Hot paths
// ask it before they build fields or format values for a line that would be dropped.
func LevelEnabled(log logrus.FieldLogger, level logrus.Level) bool {
	switch l := log.(type) {
	case *logrus.Entry:
		return l.Logger.IsLevelEnabled(level)
	case *logrus.Logger:
		return l.IsLevelEnabled(level)
	}
	return true
}
