// Package archtest checks the layering of docs/ARCHITECTURE.md §2 against the real
// import graph, so a forbidden import fails `go test` instead of waiting for a review
// (the habit of Kubernetes' import-boss).
//
// The graph comes from `go list -json ./...` run at the module root: for every
// package of the module its direct imports (Imports) and its transitive dependencies
// (Deps). Only the code of a package counts, not its tests: a _test.go file may use the
// simulator or any plugin to set up a scenario.
//
// The rules (see Rules):
//
//   - plugins/vpp/..., plugins/linux/... and plugins/govppmux never depend on a Contiv
//     plugin (plugins/controller, contivconf, nodesync, podmanager, ipam, ipnet,
//     service, policy), on plugins/ksr nor on the Kubernetes models (api/k8s):
//     descriptors know nothing of Kubernetes.
//   - plugins/kvscheduler/... depends on no plugin: the scheduler knows no descriptor.
//   - only cmd/..., standalone and tests depend on pkg/vppsim: nothing in the
//     production path knows it runs against a simulation.
//   - api/models/... depends on no package of the module other than api/models/...:
//     the models are the shared vocabulary at the bottom of the graph.
//   - api/... (the dataplane models, the Kubernetes models of api/k8s and their
//     resource table api/k8s/dbresources) depends on nothing but api/... and pkg/...:
//     the vocabulary every plugin shares sits on the floor, below the plugins.
//   - pkg/... depends on nothing of the module outside pkg/...
//   - internal/testkit depends on nothing of the module: the tests of every package,
//     pkg/ included, share it without an import cycle.
//   - no plugin but plugins/ksr's own packages depends on plugins/ksr: "ksr" names
//     the reflector, never the vocabulary (cmd/contiv-ksr runs it; standalone, which
//     loads a cluster file the way contiv-ksr writes it, may use its converters).
//
// A violation names the package, the forbidden package it reaches and the chain of
// direct imports that reaches it, e.g.
//
//	plugins/govppmux -> plugins/controller/api: VPP and Linux plugins never depend on Contiv plugins, ksr or the Kubernetes models
//
// Check is a pure function of the graph, so the test of the test feeds it a synthetic
// graph with a forbidden import and asserts the report. Everything lives in _test.go
// files: the package is only a test, nothing imports it.
package archtest
