package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RunDir records the labs of this machine: a file per lab, named after it, holding the
// PID of the process that owns it and the directory to remove with it (empty when the
// user chose it). A lab whose owner died without Close (a crash, a panicking test) is
// swept by the next Start: its processes died with their parent (parent-death signal),
// its namespaces and directory are removed here.
const RunDir = "/run/contiv-lab"

// registerLab records a starting lab.
func registerLab(name, removableDir string) error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("lab registry: %w", err)
	}
	data := strconv.Itoa(os.Getpid()) + "\n" + removableDir + "\n"
	if err := os.WriteFile(filepath.Join(RunDir, name), []byte(data), 0o644); err != nil {
		return fmt.Errorf("lab registry: %w", err)
	}
	return nil
}

// unregisterLab forgets a closed lab.
func unregisterLab(name string) error {
	err := os.Remove(filepath.Join(RunDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// SweepStale removes what labs whose owner process is gone left behind (network
// namespaces, their temporary directory) and returns their names.
func SweepStale() ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab registry: %w", err)
	}
	var swept []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		data, err := os.ReadFile(filepath.Join(RunDir, name))
		if err != nil {
			continue
		}
		lines := strings.SplitN(string(data), "\n", 3)
		pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		if err := removeNetnsWithPrefix(name + "-"); err != nil {
			errs = append(errs, fmt.Errorf("stale lab %s: %w", name, err))
			continue
		}
		if len(lines) > 1 {
			if dir := strings.TrimSpace(lines[1]); dir != "" && strings.Contains(filepath.Base(dir), name) {
				if err := os.RemoveAll(dir); err != nil {
					errs = append(errs, fmt.Errorf("stale lab %s: %w", name, err))
				}
			}
		}
		if err := unregisterLab(name); err != nil {
			errs = append(errs, err)
		}
		swept = append(swept, name)
	}
	return swept, errors.Join(errs...)
}

// alive tells whether a process with the PID exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeNetnsWithPrefix deletes the named network namespaces starting with prefix.
func removeNetnsWithPrefix(prefix string) error {
	entries, err := os.ReadDir(NetnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			errs = append(errs, deleteNetns(e.Name()))
		}
	}
	return errors.Join(errs...)
}
