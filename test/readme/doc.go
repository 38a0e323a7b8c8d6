// Package readme checks that README.md tells the truth: its 5-minute tour, run against a
// standalone agent started as `make run` starts it, prints what the README shows
// (TestTourPrintsWhatTheREADMEShows, root only), and its lists of binaries, make targets,
// tools, lint checks and CI steps match the Makefile, .ci/run and cmd/
// (TestDevelopmentTableMatchesTheMakefile and its siblings).
//
// The tour's code blocks are parsed from the README: a ```sh block is run, the fenced
// block right after it (if not ```sh) is its output. An HTML comment right before a
// command block changes how it is checked:
//
//	<!-- tour-test: each output line is one of those shown -->   load-balanced answers
//	<!-- tour-test: retry -->                                    run again until it matches
//
// Outputs are compared with their varying parts masked (see masks). The package has no
// code besides its tests.
package readme
