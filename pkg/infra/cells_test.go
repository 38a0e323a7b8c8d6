package infra

import (
	"strings"
	"testing"
)

// namedPlugin is a plugin that only has a name.
type namedPlugin string

func (p namedPlugin) Init() error    { return nil }
func (p namedPlugin) Close() error   { return nil }
func (p namedPlugin) String() string { return string(p) }

var (
	keyA      = NewKey[string]("a")
	keyB      = NewKey[string]("b")
	testGroup = NewGroup[string]("handlers")
)

// plain is a cell that builds a plugin of its name and declares the given constraints.
func plain(name string, needs ...string) Cell {
	return Cell{Name: name, Needs: needs, Build: func(*Scope) (Plugin, error) { return namedPlugin(name), nil }}
}

func providing(c Cell, k Key[string], v string) Cell {
	c.Provides = append(c.Provides, k.String())
	build := c.Build
	c.Build = func(s *Scope) (Plugin, error) {
		Provide(s, k, v)
		return build(s)
	}
	return c
}

func TestAssembleDerivesTheOrderFromTheDeclarations(t *testing.T) {
	// Listed in the wrong order on purpose: the declarations decide.
	reader := plain("reader", "a")
	late := plain("late")
	late.After = []string{"reader"}
	early := plain("early")
	early.Before = []string{"provider"}
	asm, err := Assemble(late, reader, providing(plain("provider"), keyA, "x"), plain("free"), early)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(asm.StartOrder, " ")
	// Among the cells ready at each step the one listed first comes first: free and
	// early are ready at once, free is listed before early.
	if want := "free early provider reader late"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	if len(asm.Plugins) != 5 || asm.Plugins[0].String() != "free" || asm.Plugins[4].String() != "late" {
		t.Fatalf("plugins not in the derived order: %v", asm.Plugins)
	}
}

func TestAssembleHandsValuesAndGroupsInOrder(t *testing.T) {
	var read string
	var handlers []string
	consumer := Cell{Name: "consumer", Needs: []string{"a"}, Uses: []string{"handlers", "b"},
		Build: func(s *Scope) (Plugin, error) { read = Get(s, keyA); return nil, nil },
		Connect: func(s *Scope) error {
			handlers = Collect(s, testGroup)
			read += Get(s, keyB) // a cycle closed by a Use: b's provider needs a
			return nil
		},
	}
	contributor := func(name string, needs ...string) Cell {
		c := plain(name, needs...)
		c.Contributes = []string{"handlers"}
		build := c.Build
		c.Build = func(s *Scope) (Plugin, error) { Contribute(s, testGroup, name); return build(s) }
		return c
	}
	h2 := contributor("h2", "a")
	h1 := contributor("h1")
	h2.After = []string{"h1"}
	asm, err := Assemble(consumer, h2, providing(plain("pa"), keyA, "A"), h1,
		providing(plain("pb", "a"), keyB, "B"))
	if err != nil {
		t.Fatal(err)
	}
	if read != "AB" {
		t.Fatalf("values read %q, want AB", read)
	}
	if strings.Join(handlers, ",") != "h1,h2" {
		t.Fatalf("group %v, want h1,h2 (the derived order)", handlers)
	}
	if len(asm.Plugins) != 4 { // consumer built no plugin
		t.Fatalf("plugins %v", asm.Plugins)
	}
}

func TestAssembleRefusesWrongDeclarations(t *testing.T) {
	undeclaredRead := Cell{Name: "sneaky", Build: func(s *Scope) (Plugin, error) { Get(s, keyA); return nil, nil }}
	undeclaredProvide := Cell{Name: "loud", Build: func(s *Scope) (Plugin, error) { Provide(s, keyB, "b"); return nil, nil }}
	notProvided := Cell{Name: "lazy", Provides: []string{"b"}, Build: func(*Scope) (Plugin, error) { return nil, nil }}
	groupInBuild := Cell{Name: "eager", Uses: []string{"handlers"}, Build: func(s *Scope) (Plugin, error) { Collect(s, testGroup); return nil, nil }}
	cyc1, cyc2 := plain("x", "a"), plain("y")
	cyc1 = providing(cyc1, keyB, "b")
	cyc2.Needs = []string{"b"}
	cyc2 = providing(cyc2, keyA, "a")
	selfAfter := plain("z")
	selfAfter.After = []string{"z"}
	badAfter := plain("w")
	badAfter.After = []string{"nobody"}
	cases := []struct {
		name  string
		cells []Cell
		want  string
	}{
		{"need without provider", []Cell{plain("r", "a")}, "cell r needs a, which no cell provides"},
		{"provided twice", []Cell{providing(plain("p1"), keyA, "1"), providing(plain("p2"), keyA, "2")}, "a is provided by both p1 and p2"},
		{"cycle of needs", []Cell{plain("first"), cyc1, cyc2}, "build order cannot hold: a cycle: x after y, y after x"},
		{"after itself", []Cell{selfAfter}, "a cycle: z after z"},
		{"after no cell", []Cell{badAfter}, "cell w starts after nobody, which is no cell"},
		{"duplicate name", []Cell{plain("d"), plain("d")}, "are both named d"},
		{"undeclared read", []Cell{providing(plain("pa"), keyA, "A"), undeclaredRead}, "cell sneaky: reads a without listing it in Needs"},
		{"undeclared provide", []Cell{undeclaredProvide}, "cell loud: provides b without listing it in Provides"},
		{"declared, not provided", []Cell{notProvided}, "cell lazy: lists b in Provides but did not provide it"},
		{"group read while building", []Cell{groupInBuild, {Name: "c", Contributes: []string{"handlers"},
			Build: func(s *Scope) (Plugin, error) { Contribute(s, testGroup, "h"); return nil, nil }}}, "cell eager: collects handlers without listing it in Uses, or outside Connect"},
		{"use without provider", []Cell{{Name: "u", Uses: []string{"zz"}, Build: func(*Scope) (Plugin, error) { return nil, nil }}}, "cell u uses zz, which no cell provides"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Assemble(c.cells...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestHoldsOrdersTheBuildOnly: a cell that holds a key is built after its provider but
// may start before it (the event loop is built first and started last).
func TestHoldsOrdersTheBuildOnly(t *testing.T) {
	holder := plain("holder")
	holder.Holds = []string{"a"}
	var held string
	build := holder.Build
	holder.Build = func(s *Scope) (Plugin, error) { held = Get(s, keyA); return build(s) }
	loop := providing(plain("loop"), keyA, "the loop")
	loop.After = []string{"holder"}
	asm, err := Assemble(holder, loop)
	if err != nil {
		t.Fatal(err)
	}
	if held != "the loop" {
		t.Fatalf("held %q", held)
	}
	if b, s := strings.Join(asm.BuildOrder, " "), strings.Join(asm.StartOrder, " "); b != "loop holder" || s != "holder loop" {
		t.Fatalf("build order %q (want loop holder), start order %q (want holder loop)", b, s)
	}
	// Without Holds the same After is a cycle, reported as such.
	holder.Holds, holder.Needs = nil, []string{"a"}
	if _, err := Assemble(holder, loop); err == nil || !strings.Contains(err.Error(), "start order cannot hold") {
		t.Fatalf("a Need against an After: %v, want a start-order cycle", err)
	}
}

// TestGroupUserStartsAfterContributors: the cell that collects a group starts after
// every contributor, whatever the listing.
func TestGroupUserStartsAfterContributors(t *testing.T) {
	runner := plain("runner")
	runner.Uses = []string{"handlers"}
	runner.Connect = func(s *Scope) error { Collect(s, testGroup); return nil }
	h := plain("h")
	h.Contributes = []string{"handlers"}
	h.Build = func(s *Scope) (Plugin, error) { Contribute(s, testGroup, "h"); return namedPlugin("h"), nil }
	asm, err := Assemble(runner, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(asm.StartOrder, " "); got != "h runner" {
		t.Fatalf("start order %q, want h runner", got)
	}
}
