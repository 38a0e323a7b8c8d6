package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Module is the import path of this module; rules are written relative to it.
const Module = "github.com/contiv-vpp/contiv-vpp"

// Package is the part of `go list -json` output the rules read.
type Package struct {
	// ImportPath is the full import path of the package.
	ImportPath string
	// Imports lists the packages its non-test files import directly.
	Imports []string
	// Deps lists every package its non-test files depend on, transitively.
	Deps []string
}

// Rule forbids packages matched by From to depend on packages matched by To.
type Rule struct {
	// Name says what the rule protects; it ends each violation message.
	Name string
	// From tells whether the rule applies to a package (path relative to Module).
	From func(rel string) bool
	// To tells whether a dependency (path relative to Module) is forbidden for a
	// package From matched. Packages outside the module are never passed.
	To func(from, dep string) bool
}

// Violation is one forbidden dependency.
type Violation struct {
	// Package is the offending package, relative to Module.
	Package string
	// Forbidden is the forbidden package it depends on, relative to Module.
	Forbidden string
	// Chain is the path of direct imports from Package to Forbidden, both included.
	Chain []string
	// Rule is the name of the broken rule.
	Rule string
}

// String renders the violation as "a -> b -> c: rule".
func (v Violation) String() string {
	return strings.Join(v.Chain, " -> ") + ": " + v.Rule
}

// under tells whether rel is dir or a package below it.
func under(rel, dir string) bool {
	return rel == dir || strings.HasPrefix(rel, dir+"/")
}

func underAny(rel string, dirs ...string) bool {
	for _, d := range dirs {
		if under(rel, d) {
			return true
		}
	}
	return false
}

// contivPlugins are the plugins that know about Kubernetes and the Contiv network
// design; the dataplane plugins below them must not depend on them.
var contivPlugins = []string{
	"plugins/controller", "plugins/contivconf", "plugins/nodesync", "plugins/podmanager",
	"plugins/ipam", "plugins/ipnet", "plugins/service", "plugins/policy", "plugins/ksr",
}

// kubernetesAware are the contivPlugins and the Kubernetes models (api/k8s).
var kubernetesAware = append(append([]string(nil), contivPlugins...), "api/k8s")

// Rules are the nevers of docs/ARCHITECTURE.md §2.
var Rules = []Rule{
	{
		Name: "VPP and Linux plugins never depend on Contiv plugins, ksr or the Kubernetes models",
		From: func(rel string) bool { return underAny(rel, "plugins/vpp", "plugins/linux", "plugins/govppmux") },
		To:   func(_, dep string) bool { return underAny(dep, kubernetesAware...) },
	},
	{
		Name: "the scheduler depends on no plugin",
		From: func(rel string) bool { return under(rel, "plugins/kvscheduler") },
		To: func(_, dep string) bool {
			return under(dep, "plugins") && !under(dep, "plugins/kvscheduler")
		},
	},
	{
		Name: "only cmd/, standalone/ and tests depend on the VPP simulator",
		From: func(rel string) bool { return !underAny(rel, "cmd", "standalone", "pkg/vppsim") },
		To:   func(_, dep string) bool { return under(dep, "pkg/vppsim") },
	},
	{
		Name: "api/models depends on no package of the module but other models",
		From: func(rel string) bool { return under(rel, "api/models") },
		To:   func(_, dep string) bool { return !under(dep, "api/models") },
	},
	{
		Name: "the api floor depends only on api/ and pkg/",
		From: func(rel string) bool { return under(rel, "api") },
		To:   func(_, dep string) bool { return !underAny(dep, "api", "pkg") },
	},
	{
		Name: "pkg/ depends on nothing of the module above it",
		From: func(rel string) bool { return under(rel, "pkg") },
		To:   func(_, dep string) bool { return !under(dep, "pkg") },
	},
	{
		Name: "the test kit (internal/testkit) depends on nothing of the module",
		From: func(rel string) bool { return under(rel, "internal/testkit") },
		To:   func(_, dep string) bool { return true },
	},
	{
		Name: "no other plugin depends on the reflector (plugins/ksr)",
		From: func(rel string) bool { return under(rel, "plugins") && !under(rel, "plugins/ksr") },
		To:   func(_, dep string) bool { return under(dep, "plugins/ksr") },
	},
}

// rel returns path relative to Module and whether it belongs to the module.
func rel(path string) (string, bool) {
	if path == Module {
		return ".", true
	}
	if r, ok := strings.CutPrefix(path, Module+"/"); ok {
		return r, true
	}
	return "", false
}

// Check applies rules to the graph and returns every violation, sorted by package
// and forbidden dependency. Each (package, forbidden dependency) pair is reported
// once, with the shortest chain of direct imports that reaches it.
func Check(pkgs []Package, rules []Rule) []Violation {
	imports := make(map[string][]string, len(pkgs))
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
	}
	var out []Violation
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		deps := p.Deps
		if deps == nil {
			deps = p.Imports // a synthetic graph may list direct imports only
		}
		for _, r := range rules {
			if !r.From(from) {
				continue
			}
			for _, d := range deps {
				dep, ok := rel(d)
				if !ok || !r.To(from, dep) {
					continue
				}
				out = append(out, Violation{
					Package:   from,
					Forbidden: dep,
					Chain:     chain(imports, p.ImportPath, d),
					Rule:      r.Name,
				})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Forbidden < out[j].Forbidden
	})
	return out
}

// chain finds the shortest path of direct imports from -> to (breadth first) and
// returns it relative to Module; when the graph lacks the edges it returns the two
// ends.
func chain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for n := to; n != ""; n = prev[n] {
				r, _ := rel(n)
				path = append(path, r)
			}
			for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
				path[i], path[j] = path[j], path[i]
			}
			return path
		}
		for _, next := range imports[cur] {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	f, _ := rel(from)
	t, _ := rel(to)
	return []string{f, t}
}

// Load runs `go list -json` for every package of the module rooted at dir.
func Load(dir string) ([]Package, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("find the go command: %w", err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,Deps,Error", "./...")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list in %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return decode(&stdout)
}

// decode reads the stream of JSON objects `go list -json` prints.
func decode(r io.Reader) ([]Package, error) {
	type listed struct {
		Package
		Error *struct{ Err string }
	}
	var out []Package
	dec := json.NewDecoder(r)
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: package %s: %s", p.ImportPath, p.Error.Err)
		}
		out = append(out, p.Package)
	}
}

// ModuleRoot returns the directory of the go.mod enclosing dir.
func ModuleRoot(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find the go command: %w", err)
	}
	cmd := exec.Command(goBin, "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD in %s: %w", dir, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return "", fmt.Errorf("%s is not inside a module", dir)
	}
	return filepath.Dir(gomod), nil
}
