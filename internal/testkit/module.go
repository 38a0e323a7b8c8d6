package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ModuleRoot returns the directory of the go.mod above the working directory (under go
// test, the package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// GoBuild runs `goCmd build -o out pkg` in dir without cgo: a static binary, as the
// images and the CNI plugins' releases ship them. goCmd "" means "go" from PATH. The
// error carries the compiler's output.
func GoBuild(goCmd, dir, out, pkg string) error {
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if data, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %v\n%s", pkg, dir, err, data)
	}
	return nil
}
