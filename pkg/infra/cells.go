package infra

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Key names a value that one cell provides and other cells read; T is the value's type.
// Keys are declared beside the code that provides the value, as package-level values
// that are never changed.
type Key[T any] struct{ name string }

// NewKey returns the key called name.
func NewKey[T any](name string) Key[T] { return Key[T]{name: name} }

// String is the key's name, as cells list it in Needs, Uses and Provides.
func (k Key[T]) String() string { return k.name }

// Group names an ordered collection of values that several cells contribute and one
// cell (or more) reads, e.g. the controller's event handlers.
type Group[T any] struct{ name string }

// NewGroup returns the group called name.
func NewGroup[T any](name string) Group[T] { return Group[T]{name: name} }

// String is the group's name, as cells list it in Contributes and Uses.
func (g Group[T]) String() string { return g.name }

// Cell declares one part of an agent where that part is defined: what it reads, what it
// provides, which other cells it must start after, and how it is built. Assemble derives
// from the declarations of all cells the order in which they are built, initialised
// and closed, and the order of every group, so that no list in main carries an order
// as a rule stated in comments.
type Cell struct {
	// Name identifies the cell in errors and in After/Before of other cells.
	Name string
	// Needs are the keys Build reads. Their providers are built, and their plugins
	// initialised, before this cell.
	Needs []string
	// Holds are keys Build reads only to keep a reference it calls once the agent runs
	// (the event loop it pushes events into): their providers are built before this
	// cell, but their plugins may start after it.
	Holds []string
	// Uses are the keys and groups Connect reads. A key imposes no order: Connect runs
	// once every cell is built, so a Use closes a cycle two Needs could not (the
	// controller reads the DB watcher, which pushes events into the controller). A
	// group does: the cell starts after every cell that contributes to it (the
	// controller runs the event handlers, so it starts after them and stops first).
	Uses []string
	// After names cells that start before this one although it reads nothing of
	// theirs; Before names cells that start after it.
	After, Before []string
	// Provides are the keys Build provides, each with Provide.
	Provides []string
	// Contributes are the groups Build adds a value to, with Contribute. A group's
	// values are in the start order of the cells that contributed them.
	Contributes []string
	// Build constructs the cell's plugin from what it needs and provides its keys. It
	// returns nil when the cell only provides values (no lifecycle of its own).
	Build func(s *Scope) (Plugin, error)
	// Connect, when set, runs after every cell is built, in the derived order, and may
	// read the keys and groups listed in Uses.
	Connect func(s *Scope) error
}

// Scope is what a cell sees while it is built or connected: the values provided so
// far. Reading or providing something the cell did not declare is an assembly error.
type Scope struct {
	asm  *assembly
	cell *Cell
	// connecting is set while Connect runs (Uses readable; nothing may be provided).
	connecting bool
}

// contribution is one value of a group and the cell that gave it.
type contribution struct {
	cell  string
	value any
}

type assembly struct {
	values map[string]any
	groups map[string][]contribution
	// startPos is each cell's position in the start order, by name.
	startPos  map[string]int
	providers map[string]string // key or group -> cell that provides it ("" for groups)
	errs      []error
}

func (s *Scope) fail(format string, args ...any) {
	s.asm.errs = append(s.asm.errs, fmt.Errorf("cell %s: "+format, append([]any{s.cell.Name}, args...)...))
}

func (s *Scope) readable(name string) bool {
	if s.connecting && contains(s.cell.Uses, name) {
		return true
	}
	return contains(s.cell.Needs, name) || contains(s.cell.Holds, name)
}

// Provide sets the value of key k; the cell must list k in Provides.
func Provide[T any](s *Scope, k Key[T], v T) {
	switch {
	case s.connecting:
		s.fail("provides %s in Connect (only Build provides)", k)
	case !contains(s.cell.Provides, k.name):
		s.fail("provides %s without listing it in Provides", k)
	default:
		s.asm.values[k.name] = v
	}
}

// Get returns the value of key k; the cell must list k in Needs (or, in Connect, in
// Uses).
func Get[T any](s *Scope, k Key[T]) T {
	var zero T
	if !s.readable(k.name) {
		where := "Needs"
		if s.connecting {
			where = "Needs or Uses"
		}
		s.fail("reads %s without listing it in %s", k, where)
		return zero
	}
	v, ok := s.asm.values[k.name]
	if !ok {
		s.fail("reads %s, which its provider %s did not provide", k, s.asm.providers[k.name])
		return zero
	}
	t, ok := v.(T)
	if !ok {
		s.fail("reads %s as %T, but it holds a %T", k, zero, v)
		return zero
	}
	return t
}

// Contribute adds v to group g; the cell must list g in Contributes.
func Contribute[T any](s *Scope, g Group[T], v T) {
	if s.connecting || !contains(s.cell.Contributes, g.name) {
		s.fail("contributes to %s without listing it in Contributes (or from Connect)", g)
		return
	}
	s.asm.groups[g.name] = append(s.asm.groups[g.name], contribution{cell: s.cell.Name, value: v})
}

// Collect returns the values of group g in the order of the cells that contributed
// them; only Connect reads groups (the group is complete once every cell is built), and
// the cell must list g in Uses.
func Collect[T any](s *Scope, g Group[T]) []T {
	if !s.connecting || !contains(s.cell.Uses, g.name) {
		s.fail("collects %s without listing it in Uses, or outside Connect", g)
		return nil
	}
	values := append([]contribution(nil), s.asm.groups[g.name]...)
	sort.SliceStable(values, func(i, j int) bool {
		return s.asm.startPos[values[i].cell] < s.asm.startPos[values[j].cell]
	})
	out := make([]T, len(values))
	for i, c := range values {
		out[i] = c.value.(T)
	}
	return out
}

// Assembly is the result of Assemble: the cells in their derived orders and the plugins
// they built, in the order the agent initialises them (and closes them backwards).
type Assembly struct {
	// BuildOrder is the names of the cells in the order they were built: every cell
	// after the providers of its Needs and Holds.
	BuildOrder []string
	// StartOrder is the names of the cells in the order their plugins start: every
	// cell after the providers of its Needs, the contributors of the groups it Uses,
	// and its After; before its Before.
	StartOrder []string
	// Plugins are the plugins the cells built, in StartOrder.
	Plugins []Plugin
}

// Assemble checks the declarations of cells, derives their order, builds them in that
// order and connects them. Cells with no constraint between them keep the order in
// which they are listed, so the listing only breaks ties. Every declaration error is an
// error here, before any plugin is initialised: a key needed and not provided or
// provided twice, an order that cannot hold (a cycle, named), an After/Before naming no
// cell, a read or a provide the cell did not declare.
func Assemble(cells ...Cell) (*Assembly, error) {
	buildOrder, startOrder, err := deriveOrders(cells)
	if err != nil {
		return nil, err
	}
	asm := &assembly{values: map[string]any{}, groups: map[string][]contribution{},
		providers: providersOf(cells), startPos: map[string]int{}}
	out := &Assembly{}
	for pos, i := range startOrder {
		asm.startPos[cells[i].Name] = pos
		out.StartOrder = append(out.StartOrder, cells[i].Name)
	}
	plugins := make([]Plugin, len(cells))
	for _, i := range buildOrder {
		c := &cells[i]
		out.BuildOrder = append(out.BuildOrder, c.Name)
		s := &Scope{asm: asm, cell: c}
		p, err := c.Build(s)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.Name, err)
		}
		for _, k := range c.Provides {
			if _, ok := asm.values[k]; !ok {
				s.fail("lists %s in Provides but did not provide it", k)
			}
		}
		if len(asm.errs) > 0 {
			return nil, errors.Join(asm.errs...)
		}
		plugins[i] = p
	}
	for _, i := range buildOrder {
		c := &cells[i]
		if c.Connect == nil {
			continue
		}
		s := &Scope{asm: asm, cell: c, connecting: true}
		if err := c.Connect(s); err != nil {
			return nil, fmt.Errorf("cell %s: connect: %w", c.Name, err)
		}
		if len(asm.errs) > 0 {
			return nil, errors.Join(asm.errs...)
		}
	}
	for _, i := range startOrder {
		if plugins[i] != nil {
			out.Plugins = append(out.Plugins, plugins[i])
		}
	}
	return out, nil
}

// providersOf maps every key to the cell that provides it and every group to "".
func providersOf(cells []Cell) map[string]string {
	m := map[string]string{}
	for _, c := range cells {
		for _, k := range c.Provides {
			m[k] = c.Name
		}
		for _, g := range c.Contributes {
			m[g] = ""
		}
	}
	return m
}

// deriveOrders checks the declarations and returns the cells' indexes in build order
// and in start order, each a topological order that, among the cells ready at each
// step, takes the one listed first.
func deriveOrders(cells []Cell) (build, start []int, err error) {
	var errs []error
	byName := map[string]int{}
	for i, c := range cells {
		if c.Name == "" || c.Build == nil {
			errs = append(errs, fmt.Errorf("cell #%d %q: a cell needs a Name and a Build", i, c.Name))
			continue
		}
		if j, dup := byName[c.Name]; dup {
			errs = append(errs, fmt.Errorf("cells #%d and #%d are both named %s", j, i, c.Name))
		}
		byName[c.Name] = i
	}
	provider := map[string]int{}
	contributors := map[string][]int{}
	for i, c := range cells {
		for _, k := range c.Provides {
			if j, dup := provider[k]; dup {
				errs = append(errs, fmt.Errorf("%s is provided by both %s and %s", k, cells[j].Name, c.Name))
			}
			provider[k] = i
		}
		for _, g := range c.Contributes {
			contributors[g] = append(contributors[g], i)
		}
	}
	// buildAfter[i] and startAfter[i] list the cells that come before cell i.
	buildAfter := make([][]int, len(cells))
	startAfter := make([][]int, len(cells))
	for i, c := range cells {
		for _, k := range c.Needs {
			j, ok := provider[k]
			switch {
			case ok:
				buildAfter[i] = append(buildAfter[i], j)
				startAfter[i] = append(startAfter[i], j)
			case contributors[k] != nil:
				errs = append(errs, fmt.Errorf("cell %s needs group %s: groups are read in Connect, list it in Uses", c.Name, k))
			default:
				errs = append(errs, fmt.Errorf("cell %s needs %s, which no cell provides", c.Name, k))
			}
		}
		for _, k := range c.Holds {
			if j, ok := provider[k]; ok {
				buildAfter[i] = append(buildAfter[i], j)
			} else {
				errs = append(errs, fmt.Errorf("cell %s holds %s, which no cell provides", c.Name, k))
			}
		}
		for _, k := range c.Uses {
			_, isKey := provider[k]
			group, isGroup := contributors[k]
			if !isKey && !isGroup {
				errs = append(errs, fmt.Errorf("cell %s uses %s, which no cell provides", c.Name, k))
			}
			startAfter[i] = append(startAfter[i], group...)
		}
		for _, n := range c.After {
			if j, ok := byName[n]; ok {
				startAfter[i] = append(startAfter[i], j)
			} else {
				errs = append(errs, fmt.Errorf("cell %s starts after %s, which is no cell", c.Name, n))
			}
		}
		for _, n := range c.Before {
			if j, ok := byName[n]; ok {
				startAfter[j] = append(startAfter[j], i)
			} else {
				errs = append(errs, fmt.Errorf("cell %s starts before %s, which is no cell", c.Name, n))
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if build, err = topoOrder(cells, buildAfter, "build"); err != nil {
		return nil, nil, err
	}
	if start, err = topoOrder(cells, startAfter, "start"); err != nil {
		return nil, nil, err
	}
	return build, start, nil
}

// topoOrder orders the cells so that each comes after the cells of its before list,
// taking among the ready cells the one listed first; what names the order in errors.
func topoOrder(cells []Cell, before [][]int, what string) ([]int, error) {
	placed := make([]bool, len(cells))
	var order []int
	for len(order) < len(cells) {
		next := -1
		for i := range cells {
			if !placed[i] && allPlaced(before[i], placed) {
				next = i
				break
			}
		}
		if next < 0 {
			return nil, fmt.Errorf("the cells' %s order cannot hold: %s", what, describeCycle(cells, before, placed))
		}
		placed[next] = true
		order = append(order, next)
	}
	return order, nil
}

func allPlaced(idx []int, placed []bool) bool {
	for _, j := range idx {
		if !placed[j] {
			return false
		}
	}
	return true
}

// describeCycle names one cycle among the cells not yet placed, e.g.
// "a must start after b, b after a".
func describeCycle(cells []Cell, before [][]int, placed []bool) string {
	start := -1
	for i := range cells {
		if !placed[i] {
			start = i
			break
		}
	}
	seen := map[int]int{} // cell -> position in path
	var path []int
	cur := start
	for {
		if pos, ok := seen[cur]; ok {
			path = path[pos:]
			break
		}
		seen[cur] = len(path)
		path = append(path, cur)
		next := -1
		for _, j := range before[cur] {
			if !placed[j] {
				next = j
				break
			}
		}
		cur = next
	}
	parts := make([]string, len(path))
	for n, i := range path {
		parts[n] = fmt.Sprintf("%s after %s", cells[i].Name, cells[path[(n+1)%len(path)]].Name)
	}
	return "a cycle: " + strings.Join(parts, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The keys of what every agent's composition root provides to its cells.
var (
	// LogsKey is the agent's log registry: each cell takes its named logger from it.
	LogsKey = NewKey[*LogRegistry]("logs")
	// NodeNameKey is this node's name.
	NodeNameKey = NewKey[string]("node-name")
	// AdminHTTPKey registers handlers on the admin (loopback or authenticated) REST API.
	AdminHTTPKey = NewKey[HandlerRegistrar]("http/admin")
	// PublicHTTPKey registers handlers on the public (read-only) REST API.
	PublicHTTPKey = NewKey[HandlerRegistrar]("http/public")
)

// ConfigKey is the key of the configuration file (or static configuration) of the
// plugin called name (-<name>-config).
func ConfigKey(name string) Key[ConfigLoader] { return NewKey[ConfigLoader]("config/" + name) }
