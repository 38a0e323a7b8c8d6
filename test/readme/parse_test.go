package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the repository's top directory (this file is in test/readme).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

func readREADME(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// section returns the text of the README from the heading that starts with from up to
// the next heading of the same level.
func section(t *testing.T, readme, from string) string {
	t.Helper()
	i := strings.Index(readme, "\n"+from)
	if i < 0 {
		t.Fatalf("README has no heading %q", from)
	}
	level := from[:strings.Index(from, " ")+1]
	rest := readme[i+1+len(from):]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return from + rest
}

// step is a command block of the README and the output block after it.
type step struct {
	line       int    // of the command block's fence, in the section
	heading    string // the last heading before it
	directive  string // of a <!-- tour-test: ... --> comment right before it
	commands   string
	output     string
	haveOutput bool
}

var directiveRe = regexp.MustCompile(`^<!-- tour-test: (.*) -->$`)

// parseSteps returns the ```sh blocks of text, each with the fenced block that follows
// it (blank lines between) as its output.
func parseSteps(text string) []step {
	type block struct {
		line                     int
		info, body, before, head string
	}
	var blocks []block
	lines := strings.Split(text, "\n")
	heading, lastText := "", ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			heading = strings.TrimLeft(l, "# ")
		}
		if !strings.HasPrefix(l, "```") {
			if strings.TrimSpace(l) != "" {
				lastText = l
			}
			continue
		}
		b := block{line: i + 1, info: strings.TrimPrefix(l, "```"), before: lastText, head: heading}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.body = strings.Join(body, "\n")
		blocks = append(blocks, b)
		lastText = "```" // a block right after this one follows a block
	}
	var steps []step
	for i, b := range blocks {
		if b.info != "sh" {
			continue
		}
		s := step{line: b.line, heading: b.head, commands: b.body}
		if m := directiveRe.FindStringSubmatch(b.before); m != nil {
			s.directive = m[1]
		}
		if i+1 < len(blocks) && blocks[i+1].info != "sh" && blocks[i+1].before == "```" {
			s.output, s.haveOutput = blocks[i+1].body, true
		}
		steps = append(steps, s)
	}
	return steps
}

func TestParseStepsPairsCommandsWithTheirOutput(t *testing.T) {
	text := "## A\n\n```sh\necho a\n```\n```\na\n```\n\nText.\n\n<!-- tour-test: retry -->\n```sh\ntrue\n```\n\n" +
		"Between.\n\n```json\n{}\n```\n"
	steps := parseSteps(text)
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2: %+v", len(steps), steps)
	}
	if s := steps[0]; s.commands != "echo a" || !s.haveOutput || s.output != "a" || s.directive != "" || s.heading != "A" {
		t.Errorf("step 1 = %+v", s)
	}
	if s := steps[1]; s.commands != "true" || s.haveOutput || s.directive != "retry" {
		t.Errorf("step 2 = %+v: a block after text is not its output", s)
	}
}

func TestTheTourHasItsCommandsAndOutputs(t *testing.T) {
	steps := parseSteps(section(t, readREADME(t), "## 5-minute tour"))
	withOutput := 0
	for _, s := range steps {
		if s.haveOutput {
			withOutput++
		}
		if s.directive != "" && s.directive != directiveRetry && s.directive != directiveOneOf {
			t.Errorf("README line %d: unknown directive %q", s.line, s.directive)
		}
	}
	if len(steps) < 10 || withOutput < 10 {
		t.Errorf("the tour has %d command blocks, %d with an output: the parser lost them", len(steps), withOutput)
	}
}
