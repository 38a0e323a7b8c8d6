// Package vpp_acl is the northbound model of VPP's ACL plugin (acl.proto):
// access lists and the lists of ACLs applied to interfaces, and the keys the
// KV scheduler stores them under.
//
// Configuration keys:
//
//	config/vpp/acls/v2/acl/<name>             ACL
//	config/vpp/acls/v2/interface/<interface>  InterfaceACLs
//
// ACL names are VPP tags and may not contain slashes; interface names may.
package vpp_acl

import (
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// ACLPrefix is the key prefix of ACL values.
	ACLPrefix = "config/vpp/acls/v2/acl/"

	// InterfacePrefix is the key prefix of InterfaceACLs values.
	InterfacePrefix = "config/vpp/acls/v2/interface/"

	pkgName = "vpp_acl"
)

// ACLKey returns the key of the ACL with the given name:
// config/vpp/acls/v2/acl/<name>.
func ACLKey(name string) string { return ACLPrefix + name }

// ParseACLKey returns the name from a key built by ACLKey; ok is false for
// any other key, including names with a slash.
func ParseACLKey(key string) (name string, ok bool) {
	name, ok = keyutil.Rest(key, ACLPrefix)
	if !ok || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// InterfaceKey returns the key of the ACL list of an interface:
// config/vpp/acls/v2/interface/<interface>.
func InterfaceKey(iface string) string { return InterfacePrefix + iface }

// ParseInterfaceKey returns the interface from a key built by InterfaceKey;
// ok is false for any other key.
func ParseInterfaceKey(key string) (iface string, ok bool) {
	return keyutil.Rest(key, InterfacePrefix)
}

// ModelKey returns the key of a value of this package by its type: ACLKey
// for an ACL, InterfaceKey for an InterfaceACLs. The error wraps
// models.ErrUnknownModel for other types and models.ErrInvalidValue for an
// ACL without a valid name or an InterfaceACLs without interface.
func ModelKey(msg proto.Message) (string, error) {
	switch v := msg.(type) {
	case *ACL:
		if v.GetName() == "" || strings.Contains(v.GetName(), "/") {
			return "", keyutil.InvalidValue(pkgName, msg, "empty name or a name with a slash")
		}
		return ACLKey(v.GetName()), nil
	case *InterfaceACLs:
		if v.GetInterface() == "" {
			return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
		}
		return InterfaceKey(v.GetInterface()), nil
	}
	return "", keyutil.UnknownModel(pkgName, msg)
}
