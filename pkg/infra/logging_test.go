package infra

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestLogRegistryPerLoggerLevels(t *testing.T) {
	var out bytes.Buffer
	r, err := NewLogRegistry(&out, LogFormatText)
	if err != nil {
		t.Fatal(err)
	}
	ctl := r.Logger("controller")
	ipam := r.Logger("ipam")
	if err := r.Apply(LogsConfig{DefaultLevel: "warn", Loggers: []LoggerLevel{{Name: "ipam", Level: "debug"}}}); err != nil {
		t.Fatal(err)
	}
	ctl.Info("controller info hidden")
	ctl.Warn("controller warn shown")
	ipam.Debug("ipam debug shown")
	late := r.Logger("late") // created after Apply: gets the default level
	late.Info("late info hidden")
	got := out.String()
	for _, s := range []string{"controller warn shown", "ipam debug shown", "logger=ipam"} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	for _, s := range []string{"controller info hidden", "late info hidden"} {
		if strings.Contains(got, s) {
			t.Errorf("output has %q:\n%s", s, got)
		}
	}
	levels := r.Levels()
	if levels["ipam"] != "debug" || levels["controller"] != "warning" || levels["late"] != "warning" {
		t.Errorf("levels = %v", levels)
	}
	if names := r.Names(); strings.Join(names, ",") != "controller,ipam,late" {
		t.Errorf("names = %v", names)
	}
}

func TestLogRegistryJSONFormat(t *testing.T) {
	var out bytes.Buffer
	r, err := NewLogRegistry(&out, LogFormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	r.Logger("rest").WithField("port", 9999).Info("listening")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %q: %v", out.String(), err)
	}
	if line["logger"] != "rest" || line["msg"] != "listening" || line["port"] != float64(9999) {
		t.Errorf("line = %v", line)
	}
}

func TestLogRegistryRejectsBadInput(t *testing.T) {
	if _, err := NewLogRegistry(nil, "xml"); err == nil || err.Error() != `log format "xml": must be "text" or "json"` {
		t.Errorf("bad format err = %v", err)
	}
	r, _ := NewLogRegistry(&bytes.Buffer{}, LogFormatText)
	tests := []struct {
		cfg  LogsConfig
		want string
	}{
		{LogsConfig{DefaultLevel: "loud"}, `default-level: "loud" is not a log level`},
		{LogsConfig{Loggers: []LoggerLevel{{Name: "ipam", Level: "chatty"}}}, `loggers[ipam].level: "chatty" is not a log level`},
		{LogsConfig{Loggers: []LoggerLevel{{Level: "info"}}}, `loggers[0].name: must not be empty`},
	}
	for _, tc := range tests {
		if err := r.Apply(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("Apply(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// A rejected config changes nothing.
	r2, _ := NewLogRegistry(&bytes.Buffer{}, LogFormatText)
	_ = r2.Apply(LogsConfig{DefaultLevel: "debug", Loggers: []LoggerLevel{{Name: "x", Level: "nope"}}})
	if lvl := r2.Logger("y").Logger.GetLevel().String(); lvl != "info" {
		t.Errorf("level after rejected config = %s, want info", lvl)
	}
}

func TestLevelEnabledReadsTheLoggerBehindAnEntry(t *testing.T) {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	entry := log.WithField("plugin", "x")
	for _, c := range []struct {
		name  string
		log   logrus.FieldLogger
		level logrus.Level
		want  bool
	}{
		{"entry, info under warn", entry, logrus.InfoLevel, false},
		{"entry, error under warn", entry, logrus.ErrorLevel, true},
		{"logger, debug under warn", log, logrus.DebugLevel, false},
		{"logger, warn under warn", log, logrus.WarnLevel, true},
		{"unknown logger", otherLogger{log}, logrus.DebugLevel, true},
	} {
		if got := LevelEnabled(c.log, c.level); got != c.want {
			t.Errorf("%s: LevelEnabled = %v, want %v", c.name, got, c.want)
		}
	}
}

// otherLogger is a FieldLogger that is neither a *logrus.Entry nor a *logrus.Logger.
type otherLogger struct{ *logrus.Logger }

func TestLoggerOrKeepsAGivenLogger(t *testing.T) {
	given := logrus.New().WithField("plugin", "x")
	if got := LoggerOr(given, "ignored"); got != given {
		t.Fatalf("LoggerOr replaced a given logger: got %#v", got)
	}
}

func TestLoggerOrDefaultsToTheStandardLoggerNamed(t *testing.T) {
	got, ok := LoggerOr(nil, "ipam").(*logrus.Entry)
	if !ok {
		t.Fatalf("LoggerOr(nil, name) = %T, want a *logrus.Entry of the standard logger", LoggerOr(nil, "ipam"))
	}
	if got.Logger != logrus.StandardLogger() {
		t.Error("LoggerOr(nil, name) does not write through logrus's standard logger")
	}
	if name := got.Data[LoggerField]; name != "ipam" || len(got.Data) != 1 {
		t.Errorf("fields of the default logger = %v, want only %s=ipam", got.Data, LoggerField)
	}
	if LoggerOr(nil, "") != logrus.StandardLogger() {
		t.Error("LoggerOr(nil, \"\") is not the bare standard logger")
	}
}
