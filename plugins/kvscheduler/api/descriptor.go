package api

import (
	"google.golang.org/protobuf/proto"
)

// Metadata is whatever extra run-time data a descriptor keeps next to a created value,
// for example the sw_if_index that VPP assigned to an interface. The scheduler stores it
// opaquely and hands it back to Update and Delete; other descriptors read it through
// the descriptor's MetadataMap.
type Metadata any

// MetadataMap is a read-only view of the metadata of every value a descriptor
// currently holds in the dataplane, indexed by the value's label (see
// KVDescriptor.KeyLabel). It is live: it reflects the scheduler's state at the moment
// of the call, and it is safe for concurrent use.
type MetadataMap interface {
	// GetValue returns the metadata stored under label and whether the label is known.
	GetValue(label string) (Metadata, bool)
	// ListAllNames returns the labels of all values with metadata, sorted.
	ListAllNames() []string
}

// KeyValuePair is one key with its value, the unit a transaction stages.
type KeyValuePair struct {
	// Key identifies the value; it is unique across all descriptors.
	Key string
	// Value is the desired (or derived) content; nil in a transaction means "delete".
	Value proto.Message
}

// KVWithMetadata is a value as it exists in the dataplane: with the metadata its
// descriptor attached and the origin that says who owns it.
type KVWithMetadata struct {
	// Key identifies the value.
	Key string
	// Value is the content of the object.
	Value proto.Message
	// Metadata is the descriptor's run-time data for the object (nil for descriptors
	// without WithMetadata).
	Metadata Metadata
	// Origin tells whether the object was configured through the scheduler (FromNB) or
	// appeared in the dataplane on its own (FromSB).
	Origin ValueOrigin
}

// ValueOrigin tells who created a value in the dataplane.
type ValueOrigin int

const (
	// UnknownOrigin is for values whose creator Retrieve cannot tell. The scheduler
	// resolves it: a value it configured itself, or one NB asked for, counts as FromNB;
	// anything else is treated as FromSB and left alone.
	UnknownOrigin ValueOrigin = iota
	// FromNB marks values configured through the scheduler. A full resync deletes them
	// when the NB state no longer asks for them.
	FromNB
	// FromSB marks values that exist in the dataplane on their own (the default route,
	// local0, a DHCP lease). The scheduler never deletes them.
	FromSB
)

var originNames = [...]string{"UNKNOWN", "FROM_NB", "FROM_SB"}

// String returns UNKNOWN, FROM_NB or FROM_SB.
func (o ValueOrigin) String() string {
	if o < 0 || int(o) >= len(originNames) {
		return "ValueOrigin(" + itoa(int(o)) + ")"
	}
	return originNames[o]
}

// MarshalText encodes the origin by name (used by encoding/json).
func (o ValueOrigin) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Dependency is one precondition of a value: a key that must exist, or any one key out
// of a set. A value is created only when all its dependencies are satisfied and is
// deleted (kept PENDING) as soon as one of them disappears.
//
// Exactly one of Key and AnyOf should be set; when Key is set AnyOf is ignored.
type Dependency struct {
	// Label names the dependency for humans: it appears in the status of a pending
	// value ("interface-exists", "vrf-table-exists", ...). Use a named constant.
	Label string
	// Key is the key of a value that must exist in the dataplane, whether it was
	// configured through NB, derived, or notified/retrieved from SB.
	Key string
	// AnyOf is satisfied when at least one existing value matches it.
	AnyOf AnyOfDependency
}

// AnyOfDependency selects a set of keys; the dependency holds while any one of them
// exists.
//
// Cost: the scheduler indexes KeyPrefixes, so checking and triggering such a dependency
// costs time proportional to the number of matching keys, not to all values held. A
// dependency with a KeySelector but no KeyPrefixes has to be checked against every
// value created or deleted and every held value when evaluated: always give prefixes.
type AnyOfDependency struct {
	// KeyPrefixes restricts the candidates to keys starting with one of these prefixes.
	KeyPrefixes []string
	// KeySelector, when not nil, further filters the candidates. It must be a pure
	// function of the key.
	KeySelector func(key string) bool
}

// Matches reports whether key satisfies the AnyOf condition (ignoring existence).
func (a AnyOfDependency) Matches(key string) bool {
	if len(a.KeyPrefixes) > 0 {
		ok := false
		for _, p := range a.KeyPrefixes {
			if len(key) >= len(p) && key[:len(p)] == p {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return a.KeySelector == nil || a.KeySelector(key)
}

// KVDescriptor teaches the scheduler how to handle one kind of value: which keys it
// owns, how to check them, how to create, update and delete them in the dataplane, how
// to read them back, and what they depend on. A plugin registers one descriptor per
// object kind with KVScheduler.RegisterKVDescriptor.
//
// All callbacks are called from the scheduler's single transaction goroutine, one at a
// time, so a descriptor needs no locking of its own for state it only touches from its
// callbacks. Callbacks may read other descriptors' metadata (GetMetadataMap) and the
// value status, but must not commit transactions: that would wait for itself.
// Validate, KeySelector, KeyLabel, ValueComparator, DerivedValues and Dependencies
// must be pure functions of their arguments; the scheduler may call them during
// planning without applying anything.
type KVDescriptor struct {
	// Name identifies the descriptor, unique among registered descriptors. It is used
	// in logs, metrics, RetrieveDependencies, GetMetadataMap and the REST dump.
	Name string

	// KeySelector reports whether the descriptor owns key. Required. The scheduler
	// asks it once per key (the answer is cached with the value), so it may be
	// moderately expensive, but it must be pure and stable. Key spaces of registered
	// descriptors must not overlap; the first registered descriptor that selects a
	// key wins.
	KeySelector func(key string) bool

	// KeyLabel shortens a key to the name the value is known by in its metadata map,
	// e.g. "config/vpp/v2/interfaces/tap1" -> "tap1". Optional; without it the label is
	// the whole key.
	KeyLabel func(key string) string

	// ValueComparator reports whether oldValue and newValue are the same configuration
	// for key, so no operation is needed. Optional; the default is proto.Equal. Use it
	// to ignore fields that do not matter or have defaults the dataplane fills in.
	ValueComparator func(key string, oldValue, newValue proto.Message) bool

	// NBKeyPrefix is the prefix under which NB stages keys of this descriptor, e.g.
	// "config/vpp/v2/interfaces/". Optional; it lets the scheduler find the
	// descriptor of a key quickly and lets the REST dump list the NB key space. Derived
	// and SB-only values have no NB prefix.
	NBKeyPrefix string

	// Validate checks a value before anything is applied. Optional. A non-nil error
	// makes the value INVALID: it is not applied (a previously applied version is
	// removed) and the error is reported in the transaction error. Return an
	// *InvalidValueError to name the offending fields.
	Validate func(key string, value proto.Message) error

	// Create puts a new value into the dataplane and returns its metadata (nil if the
	// descriptor has none). Required unless the descriptor only describes SB values.
	// It is called only once all dependencies of the value exist. On error the value
	// is FAILED (or RETRYING) and nothing of it is assumed to exist.
	Create func(key string, value proto.Message) (Metadata, error)

	// CreateAsync optionally starts the creation of a value and returns a function that
	// waits for its outcome (what Create would have returned). When the scheduler has
	// several values of the descriptor to create one after another, each new, with its
	// dependencies satisfied, without derived values and with nothing depending on it,
	// it starts them all before waiting for the first, so that the descriptor can keep
	// requests to the dataplane in flight across values (10k NAT mappings then cost one
	// pipeline, not 10k round trips). Every started creation is waited for, in start
	// order, and no other callback of the descriptor is called in between. Create must
	// be set as well: it is used for every other creation.
	CreateAsync func(key string, value proto.Message) (wait func() (Metadata, error))

	// Delete removes a value from the dataplane. Required for values the scheduler
	// creates. Dependents and derived values of the value have already been deleted
	// when it is called. On error the value is FAILED and assumed to still exist.
	Delete func(key string, value proto.Message, metadata Metadata) error

	// DeleteAsync optionally starts a Delete and returns a function that waits for its
	// outcome (what Delete would have returned), the way CreateAsync does for Create.
	// When the scheduler has several values of the descriptor to delete one after
	// another (with creations and updates run together with them), each top-level, in
	// the dataplane, no longer wanted, without derived values and with nothing
	// depending on it, it starts them all before waiting for the first: a node leaving
	// the cluster removes 1,000 NodePort translations of its address, which then cost
	// one pipeline to VPP instead of 1,000 round trips. Nothing depends on such a
	// value, so deleting one cannot change whether another value of the run may be
	// created, updated or deleted; every value with dependents or derived values is
	// deleted by Delete, after them, as before. The semantics are those of Delete: on
	// error the value is assumed to still exist, its metadata stays, and the failure
	// is retried (or reverted) like that of Delete; the metadata is dropped only once
	// the wait reports success. Every started operation is waited for, in start order,
	// and the dataplane must apply them in that order (a delete started before a
	// creation is applied before it): the descriptor sends them on one pipeline. No
	// other callback of the descriptor that changes or reads the dataplane is called
	// in between. Delete must be set as well: it is used for every other deletion.
	DeleteAsync func(key string, value proto.Message, metadata Metadata) (wait func() error)

	// Update changes a value in place from oldValue to newValue and returns the new
	// metadata. Optional: without it every change is a delete followed by a create
	// (with the dependents of the value deleted before and re-created after). Derived
	// values that newValue no longer has are deleted before Update is called; the new
	// and changed ones are applied after. On error the old value is assumed to be in
	// place, unchanged.
	Update func(key string, oldValue, newValue proto.Message, oldMetadata Metadata) (Metadata, error)

	// UpdateAsync optionally starts an Update and returns a function that waits for its
	// outcome (what Update would have returned), the way CreateAsync does for Create.
	// When the scheduler has several values of the descriptor to update (or create, or
	// leave as they are) one after another, each top-level and in the dataplane, with
	// its dependencies satisfied, no derived values (before or after) and no recreate
	// needed (UpdateWithRecreate), it starts them all before waiting for the first: a
	// node joining a cluster changes 1,000 NodePort DNATs, which then cost one pipeline
	// to VPP instead of 1,000 round trips. The semantics are those of Update: on error
	// the old value is assumed to be in place, unchanged (the descriptor undoes what it
	// did), and the failure is retried like that of Update. Every started update is
	// waited for, in start order, and no other callback of the descriptor that changes
	// or reads the dataplane is called in between. Update must be set as well: it is
	// used for every other update.
	UpdateAsync func(key string, oldValue, newValue proto.Message, oldMetadata Metadata) (wait func() (Metadata, error))

	// UpdateWithRecreate reports whether the change from oldValue to newValue needs
	// a delete and create instead of Update (e.g. a changed interface type). Optional;
	// without it Update is used whenever it exists.
	UpdateWithRecreate func(key string, oldValue, newValue proto.Message, metadata Metadata) bool

	// Retrieve reads back every value of this descriptor that exists in the
	// dataplane, with its metadata and origin. Optional: nil means values of this
	// descriptor are never dumped and the scheduler trusts its own record of them.
	//
	// correlate lists the values NB currently wants for this descriptor (with the
	// metadata the scheduler holds for them), to help map dataplane objects back to
	// keys, e.g. to restore a name VPP does not keep. Return FromNB for objects the
	// agent created (for VPP interfaces: those tagged with a logical name), FromSB for
	// objects that exist on their own, UnknownOrigin when it cannot be told.
	//
	// Retrieve is called during Full and Downstream resync, in an order that respects
	// RetrieveDependencies, and by DumpValuesByDescriptor with SBView.
	Retrieve func(correlate []KVWithMetadata) ([]KVWithMetadata, error)

	// IsRetriableFailure tells whether an error returned by Create, Update or Delete
	// may go away if the operation is tried again (a transaction committed WithRetry
	// retries only those). Optional; by default every failure is retriable.
	IsRetriableFailure func(err error) bool

	// DerivedValues returns the values that exist as parts of value, e.g. the IP
	// addresses of an interface or its membership in a bridge domain. Optional. Each
	// derived value is a value of its own: found its own descriptor by key (a derived
	// key that no descriptor selects is a "property": it is created and deleted
	// without any callback and serves only as something to depend on), has its own
	// dependencies, is created after its parent and deleted before it, and follows the
	// parent when it changes (the scheduler diffs the old and new derived sets).
	// Derived keys must not collide with NB keys.
	DerivedValues func(key string, value proto.Message) []KeyValuePair

	// Dependencies lists what must exist before value can be created. Optional.
	// Called whenever the desired value changes.
	Dependencies func(key string, value proto.Message) []Dependency

	// RetrieveDependencies names descriptors whose Retrieve must run before this one's
	// (typically because this Retrieve reads their metadata, e.g. routes need the
	// interface index map). Unknown names are ignored; cycles are reported at resync.
	RetrieveDependencies []string

	// WithMetadata makes the scheduler keep the metadata returned by Create/Update/
	// Retrieve in a MetadataMap indexed by KeyLabel, available through
	// KVScheduler.GetMetadataMap(Name).
	WithMetadata bool
}
