package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleRootIsTheDirectoryOfGoMod(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(data), "module github.com/contiv-vpp/contiv-vpp\n") {
		t.Fatalf("%s/go.mod: %v %.40q", root, err, data)
	}
	if wd, _ := os.Getwd(); wd != filepath.Join(root, "internal", "testkit") {
		t.Errorf("root %s is not two levels above %s", root, wd)
	}
}

func TestModuleRootFailsOutsideAModule(t *testing.T) {
	t.Chdir(t.TempDir())
	if root, err := ModuleRoot(); err == nil || !strings.Contains(err.Error(), "no go.mod above") {
		t.Fatalf("ModuleRoot = %q, %v outside a module", root, err)
	}
}

func TestGoBuildReportsTheCompilerOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir := t.TempDir()
	src := "module m\n\ngo 1.26\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { undefinedName() }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := GoBuild("", dir, filepath.Join(dir, "bin"), ".")
	if err == nil || !strings.Contains(err.Error(), "undefined: undefinedName") {
		t.Fatalf("GoBuild of a broken package = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := GoBuild("", dir, filepath.Join(dir, "bin"), "."); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "bin")); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("no executable built: %v", err)
	}
}
