package k8s

// A stand-in for `helm template` (Helm 3), limited to what the chart uses, because Helm
// cannot be installed where the project is built. It reproduces:
//
//   - Chart.yaml (apiVersion v2) and values.yaml read as Helm reads them: values through
//     sigs.k8s.io/yaml into map[string]any, so every number is a float64, as in Helm;
//   - every file under templates/ parsed into one template set named
//     "<chart>/templates/<file>"; files starting with "_" (partials) and NOTES.txt are
//     not rendered as manifests;
//   - the top-level objects .Values, .Chart (.Name, .Version) and .Release (.Name,
//     .Namespace, .Service);
//   - the functions toYaml, indent, nindent, quote, default and fail, implemented as Helm
//     and Sprig implement them, besides text/template's built-ins (if, range, with,
//     printf, eq, ...). A template calling any other function fails to parse, so the chart cannot
//     drift out of this subset unnoticed;
//   - splitting the output into documents at "---" lines, dropping empty ones, and
//     ordering them by Helm's install order of kinds (stable for equal kinds).
//
// One deliberate difference: a missing value is an error here (missingkey=error), where
// Helm renders it as an empty string; a chart that renders here renders the same in Helm.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// helmInstallOrder is the order in which Helm 3 sorts the kinds of a release
// (releaseutil.InstallOrder); kinds not listed come last.
var helmInstallOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
	"PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
	"ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService",
}

// renderedDoc is one document of a rendered chart.
type renderedDoc struct {
	// Source is the template it came from, "contiv-vpp/templates/vswitch.yaml".
	Source string
	// Kind and Name identify the object.
	Kind, Name string
	// Text is the document without separators or surrounding blank lines.
	Text string
}

// helmFuncs returns the Helm functions the chart may use.
func helmFuncs() template.FuncMap {
	return template.FuncMap{
		"toYaml":  helmToYAML,
		"indent":  helmIndent,
		"nindent": func(spaces int, s string) string { return "\n" + helmIndent(spaces, s) },
		"quote":   helmQuote,
		"default": helmDefault,
		"int64":   helmInt64,
		// fail is Helm's: the rendering stops with the message.
		"fail": func(msg string) (string, error) { return "", errors.New(msg) },
	}
}

// helmInt64 is sprig's int64: a number of the values (a float64 once parsed, as in
// Helm, which would print 1073741824 as 1.073741824e+09), an integer or a decimal
// string as an int64.
func helmInt64(v any) (int64, error) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) {
			return 0, fmt.Errorf("int64: %v is not an integer", n)
		}
		return int64(n), nil
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case string:
		return strconv.ParseInt(n, 10, 64)
	}
	return 0, fmt.Errorf("int64: %v (%T) is not a number", v, v)
}

// helmToYAML is Helm's toYaml: sigs.k8s.io/yaml without the final newline. Helm turns a
// marshalling error into an empty string; here it fails the rendering.
func helmToYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYaml: %w", err)
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// helmIndent is Sprig's indent: every line of s, the first included, prefixed by spaces.
func helmIndent(spaces int, s string) string {
	pad := strings.Repeat(" ", spaces)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// helmQuote is Sprig's quote: each non-nil argument as a Go-quoted string, joined by
// spaces.
func helmQuote(args ...any) string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a == nil {
			continue
		}
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case []byte:
			s = string(v)
		case error:
			s = v.Error()
		case fmt.Stringer:
			s = v.String()
		default:
			s = fmt.Sprintf("%v", v)
		}
		out = append(out, fmt.Sprintf("%q", s))
	}
	return strings.Join(out, " ")
}

// helmDefault is Sprig's default: given (the piped value) unless it is empty, else def.
func helmDefault(def any, given ...any) any {
	if len(given) == 0 || helmEmpty(given[0]) {
		return def
	}
	return given[0]
}

// helmEmpty is Sprig's notion of an empty value.
func helmEmpty(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Complex64, reflect.Complex128:
		return rv.Complex() == 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Struct:
		return false
	default:
		return rv.IsNil()
	}
}

// chartMeta is the part of Chart.yaml the renderer needs.
type chartMeta struct {
	APIVersion string `json:"apiVersion"`
	Name       string `json:"name"`
	Version    string `json:"version"`
}

// renderChart renders the chart in dir with its values.yaml, deep-merged with overrides
// (as `--set`/`-f` would), and returns the documents in Helm's order.
func renderChart(dir string, overrides map[string]any) ([]renderedDoc, error) {
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var meta chartMeta
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	if meta.APIVersion != "v2" || meta.Name == "" || meta.Version == "" {
		return nil, fmt.Errorf("Chart.yaml: want apiVersion v2, a name and a version, got %+v", meta)
	}
	data, err = os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	mergeValues(values, overrides)

	files, err := filepath.Glob(filepath.Join(dir, "templates", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	set := template.New(meta.Name).Option("missingkey=error").Funcs(helmFuncs())
	var names []string
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		name := meta.Name + "/templates/" + filepath.Base(f)
		if _, err := set.New(name).Parse(string(text)); err != nil {
			return nil, err
		}
		// Partials and NOTES.txt (printed after an install) are no manifests.
		if base := filepath.Base(f); !strings.HasPrefix(base, "_") && base != "NOTES.txt" {
			names = append(names, name)
		}
	}

	top := map[string]any{
		"Values":  values,
		"Chart":   map[string]any{"Name": meta.Name, "Version": meta.Version},
		"Release": map[string]any{"Name": meta.Name, "Namespace": "kube-system", "Service": "Helm"},
	}
	var docs []renderedDoc
	for _, name := range names {
		var out strings.Builder
		if err := set.ExecuteTemplate(&out, name, top); err != nil {
			return nil, err
		}
		for _, text := range splitDocuments(out.String()) {
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(text), &head); err != nil {
				return nil, fmt.Errorf("%s: rendered document is not YAML: %w\n%s", name, err, text)
			}
			if head.Kind == "" || head.Metadata.Name == "" {
				return nil, fmt.Errorf("%s: rendered document without kind or name:\n%s", name, text)
			}
			docs = append(docs, renderedDoc{Source: name, Kind: head.Kind, Name: head.Metadata.Name, Text: text})
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return kindRank(docs[i].Kind) < kindRank(docs[j].Kind) })
	return docs, nil
}

// kindRank is the position of kind in Helm's install order.
func kindRank(kind string) int {
	for i, k := range helmInstallOrder {
		if k == kind {
			return i
		}
	}
	return len(helmInstallOrder)
}

// mergeValues merges src into dst: maps recursively, anything else replaced.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				mergeValues(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocuments splits a YAML stream at its "---" lines and drops blank documents.
func splitDocuments(stream string) []string {
	var docs []string
	for _, d := range docSeparator.Split(stream, -1) {
		d = strings.Trim(d, "\n")
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}

// manifestHeader opens contiv-vpp.yaml.
const manifestHeader = `# Contiv-VPP: the Kubernetes objects of a cluster installation, all in kube-system.
#
#   kubectl apply -f contiv-vpp.yaml
#
# Generated from the Helm chart contiv-vpp/ with its default values; do not edit. Change
# the chart, then regenerate this file with
#   go test ./k8s -run TestChartRendersManifest -update
# ` + "`helm template contiv-vpp k8s/contiv-vpp`" + ` renders the same objects.
`

// formatManifest writes rendered documents the way helm template prints them.
func formatManifest(docs []renderedDoc) []byte {
	var b strings.Builder
	b.WriteString(manifestHeader)
	for _, d := range docs {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", d.Source, d.Text)
	}
	return []byte(b.String())
}

func TestHelmFunctionsBehaveLikeHelm(t *testing.T) {
	y, err := helmToYAML(map[string]any{"b": 1.0, "a": []any{"x", true}, "d": "5s", "big": 1440.0})
	if err != nil {
		t.Fatal(err)
	}
	// Keys sorted, numbers from values.yaml (float64) written as integers.
	if want := "a:\n- x\n- true\nb: 1\nbig: 1440\nd: 5s"; y != want {
		t.Errorf("toYaml = %q, want %q", y, want)
	}
	if got, want := helmIndent(2, "a\nb"), "  a\n  b"; got != want {
		t.Errorf("indent = %q, want %q", got, want)
	}
	if got := helmQuote("a\"b", nil, 3.0); got != `"a\"b" "3"` {
		t.Errorf("quote = %q", got)
	}
	for _, tc := range []struct {
		given any
		want  any
	}{
		{nil, "d"}, {"", "d"}, {false, "d"}, {0.0, "d"}, {[]any{}, "d"},
		{map[string]any{}, "d"}, {"x", "x"}, {true, true}, {1.0, 1.0},
	} {
		if got := helmDefault("d", tc.given); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("default %q %#v = %#v, want %#v", "d", tc.given, got, tc.want)
		}
	}

	// A function outside the subset fails at parse time.
	if _, err := template.New("t").Funcs(helmFuncs()).Parse(`{{ .Values.x | b64enc }}`); err == nil {
		t.Error("template using b64enc parsed; the renderer must reject functions it does not implement")
	}
}
