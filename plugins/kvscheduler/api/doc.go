// Package api is the public contract of the KV scheduler: what a descriptor must
// provide so the scheduler can drive one kind of dataplane object, and what a plugin
// may ask of the scheduler (transactions, status, history, metadata, dumps).
//
// Plugins never call descriptors themselves. They stage key-value pairs in a Txn
// (key -> proto.Message, nil value to delete), commit it, and the scheduler works out
// in which order to call the descriptors so the dataplane matches the staged state.
//
// The package holds types, constants and small helpers only; the engine lives in the
// parent package kvscheduler. It is not for dataplane code: descriptors live in the
// plugins that own the objects (plugins/vpp/..., plugins/linux/...).
package api
