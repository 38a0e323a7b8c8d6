// Package testkit is what the module's tests share instead of each keeping a copy:
//
//   - waiting for a condition another goroutine or process makes true: Wait (returns
//     an error), Eventually and EventuallyTrue (fail the test). One poll loop, whose
//     failure names what was awaited, how long it waited and the last error;
//   - a fake clock, Clock, for the code that takes one of the k8s.io/utils/clock
//     interfaces (the controller, the scheduler, the DB watcher, govppmux, the
//     simulator): a testingclock.FakeClock that can also wait until the code under
//     test has armed its timers (AwaitWaiters) or taken its ticks (AwaitTicksTaken),
//     so that a test steps time instead of sleeping;
//   - the fixtures the process-level suites (test/e2e, test/cluster, test/scale) share:
//     ModuleRoot and GoBuild.
//
// It is imported by _test.go files and by test-only helper packages, never by the
// code that ships. It sits on the floor of the module: it imports nothing of it, so a
// test of any package, pkg/ included, may use it.
//
// What it does not do: it has no global state, it starts no process, and it never sleeps to
// order goroutines: a test that needs "nothing happens" over real time says so with a
// time.Sleep of its own and a comment.
package testkit
