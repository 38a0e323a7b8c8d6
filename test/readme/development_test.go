package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func readFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// makeVars returns the simple variables of the Makefile (NAME := value, NAME ?= value).
func makeVars(makefile string) map[string]string {
	vars := map[string]string{}
	re := regexp.MustCompile(`(?m)^([A-Z_]+)\s*[:?]?=\s*(.*)$`)
	for _, m := range re.FindAllStringSubmatch(makefile, -1) {
		vars[m[1]] = strings.TrimSpace(m[2])
	}
	return vars
}

// helpTargets returns the targets `make help` lists: those whose line carries "## ".
func helpTargets(makefile string) []string {
	re := regexp.MustCompile(`(?m)^([a-z$][^:\n]*):[^#\n]*## `)
	var out []string
	for _, m := range re.FindAllStringSubmatch(makefile, -1) {
		out = append(out, m[1])
	}
	return out
}

// recipe returns the lines of a target's recipe.
func recipe(makefile, target string) string {
	lines := strings.Split(makefile, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, target+":") {
			continue
		}
		var out []string
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "\t") {
				break
			}
			out = append(out, r)
		}
		return strings.Join(out, "\n")
	}
	return ""
}

// cmdBinaries lists the directories of cmd/: one binary each.
func cmdBinaries(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot(t), "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// tableRow returns the row of a Markdown table whose first cell starts with first.
func tableRow(t *testing.T, text, first string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "| "+first) {
			return l
		}
	}
	t.Fatalf("no table row starting with %q", first)
	return ""
}

func TestBinariesAreTheSameInCmdTheMakefileAndTheREADME(t *testing.T) {
	bins := cmdBinaries(t)
	makefile := readFile(t, "Makefile")
	inMake := strings.Fields(makeVars(makefile)["BINARIES"])
	slices.Sort(inMake)
	if !slices.Equal(bins, inMake) {
		t.Errorf("cmd/ has %v, the Makefile's BINARIES %v", bins, inMake)
	}
	readme := readREADME(t)
	build := tableRow(t, section(t, readme, "## Development"), "`make build`")
	parts := section(t, readme, "## What runs today")
	for _, b := range bins {
		if !strings.Contains(build, "`"+b+"`") {
			t.Errorf("README's make build row does not list %s", b)
		}
		if !regexp.MustCompile("(?m)^\\| [^|]*`" + regexp.QuoteMeta(b) + "`").MatchString(parts) {
			t.Errorf("README's \"What runs today\" has no part %s", b)
		}
	}
	m := regexp.MustCompile(`every binary \(([^)]*)\)`).FindStringSubmatch(build)
	if m == nil {
		t.Fatalf("README's make build row has no list \"every binary (...)\": %s", build)
	}
	var listed []string
	for _, b := range strings.Split(m[1], ", ") {
		listed = append(listed, strings.Trim(b, "`"))
	}
	slices.Sort(listed)
	if !slices.Equal(listed, bins) {
		t.Errorf("README's make build row lists %v, cmd/ has %v", listed, bins)
	}
}

func TestDevelopmentTableMatchesTheMakefile(t *testing.T) {
	makefile := readFile(t, "Makefile")
	dev := section(t, readREADME(t), "## Development")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `make ([a-z0-9-]+)`").FindAllStringSubmatch(dev, -1) {
		documented[m[1]] = true
	}
	// make all and make <binary> are in the build row.
	documented["all"] = strings.Contains(tableRow(t, dev, "`make build`"), "`make all`")
	documented["$(BINARIES)"] = strings.Contains(tableRow(t, dev, "`make build`"), "`make <binary>`")
	targets := helpTargets(makefile)
	if len(targets) < 10 {
		t.Fatalf("found %d targets with a ## description in the Makefile: %v", len(targets), targets)
	}
	for _, target := range targets {
		if !documented[target] {
			t.Errorf("make %s (make help) has no row in README's Development table", target)
		}
		delete(documented, target)
	}
	for target, ok := range documented {
		if ok {
			t.Errorf("README's Development table has make %s, which make help does not list", target)
		}
	}
}

func TestDevelopmentTableNamesEveryToolAndVersionMakeToolsInstalls(t *testing.T) {
	makefile := readFile(t, "Makefile")
	vars := makeVars(makefile)
	row := tableRow(t, section(t, readREADME(t), "## Development"), "`make tools`")
	re := regexp.MustCompile(`install ([^@\s]+)@\$\(([A-Z_]+)\)`)
	installs := re.FindAllStringSubmatch(recipe(makefile, "tools"), -1)
	if len(installs) < 5 {
		t.Fatalf("make tools installs %d tools: the parser lost them", len(installs))
	}
	for _, m := range installs {
		tool, version := filepath.Base(m[1]), vars[m[2]]
		if version == "" {
			t.Errorf("make tools: %s@$(%s): no such variable", m[1], m[2])
			continue
		}
		if !strings.Contains(row, "`"+tool+"`") || !strings.Contains(row, version) {
			t.Errorf("README's make tools row lacks %s %s: %s", tool, version, row)
		}
	}
}

func TestDevelopmentTableNamesEveryLintCheck(t *testing.T) {
	lint := recipe(readFile(t, "Makefile"), "lint")
	row := tableRow(t, section(t, readREADME(t), "## Development"), "`make lint`")
	checks := map[string]string{"gofmt": "gofmt", "GOIMPORTS": "goimports", "vet": "go vet", "STATICCHECK": "staticcheck"}
	found := 0
	for inMake, inREADME := range checks {
		if !strings.Contains(lint, inMake) {
			continue
		}
		found++
		if !strings.Contains(row, inREADME) {
			t.Errorf("make lint runs %s; README's row does not say so: %s", inREADME, row)
		}
	}
	if found == 0 {
		t.Fatal("no known check found in make lint's recipe")
	}
}

func TestREADMENamesEveryStepOfCI(t *testing.T) {
	dev := section(t, readREADME(t), "## Development")
	ci := dev[strings.Index(dev, "CI runs `.ci/run`"):]
	re := regexp.MustCompile(`(?m)^\s*((?:make|go mod|\./scripts/)[^#\n]*?)\s*(?:#.*)?$`)
	steps := re.FindAllStringSubmatch(readFile(t, ".ci/run"), -1)
	if len(steps) < 6 {
		t.Fatalf("found %d steps in .ci/run: the parser lost them", len(steps))
	}
	for _, m := range steps {
		step := strings.TrimPrefix(m[1], "./")
		if !strings.Contains(ci, "`"+step+"`") {
			t.Errorf(".ci/run runs %q; README's CI paragraph does not name it", step)
		}
	}
}
