package vppsim

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
)

// sockclntCreateID is the message ID govpp's socketclient (and every other
// VPP socket client) hard-codes for sockclnt_create: it must be known before
// the message table has been received.
const sockclntCreateID = 15

// memclntOrder is the definition order of the messages in VPP's memclnt.api.
// VPP numbers messages in that order starting at 1, which is what puts
// sockclnt_create at ID 15.
var memclntOrder = [...]string{
	"memclnt_create", "memclnt_create_reply",
	"memclnt_delete", "memclnt_delete_reply",
	"rx_thread_exit", "memclnt_rx_thread_suspend", "memclnt_read_timeout",
	"rpc_call", "rpc_call_reply",
	"get_first_msg_id", "get_first_msg_id_reply",
	"api_versions", "api_versions_reply",
	"trace_plugin_msg_ids",
	"sockclnt_create", "sockclnt_create_reply",
	"sockclnt_delete", "sockclnt_delete_reply",
	"sock_init_shm", "sock_init_shm_reply",
	"memclnt_keepalive", "memclnt_keepalive_reply",
	"control_ping", "control_ping_reply",
	"memclnt_create_v2", "memclnt_create_v2_reply",
	"get_api_json", "get_api_json_reply",
}

// msgInfo describes one message of the table.
type msgInfo struct {
	id   uint16
	name string // VPP name, e.g. "sw_interface_dump"
	crc  string
	key  string // "<name>_<crc>" as listed in sockclnt_create_reply
	typ  api.MessageType
	rt   reflect.Type // struct type (not pointer)
	// reply is the reply of a request ("<name>_reply"), nil for dumps and
	// for the few requests VPP answers with nothing.
	reply *msgInfo
	// details is the details message of a dump or of a cursor-based get.
	details *msgInfo
	// hasRetval tells whether a reply carries an i32 "retval" field.
	hasRetval bool
}

// newMsg returns a new zero message of this type.
func (m *msgInfo) newMsg() api.Message {
	return reflect.New(m.rt).Interface().(api.Message)
}

// headerLen is the length of the message header that precedes the payload:
// msg_id + client_index + context for requests, msg_id + context for replies
// and msg_id + client_index for events.
func (m *msgInfo) headerLen() int {
	switch m.typ {
	case api.RequestMessage:
		return 10
	case api.ReplyMessage, api.EventMessage:
		return 6
	}
	return 2
}

// msgTable is the immutable message table the simulator announces.
type msgTable struct {
	byID   []*msgInfo // index = message ID; entry 0 is nil
	byKey  map[string]*msgInfo
	byName map[string]*msgInfo
	byType map[reflect.Type]*msgInfo
	// entries is the message table as sent in sockclnt_create_reply.
	entries []memclnt.MessageTableEntry
}

// sharedMsgTable is built once: the set of linked binapi packages cannot
// change while the program runs, and every simulator announces the same IDs.
var sharedMsgTable = sync.OnceValues(buildMsgTable)

func buildMsgTable() (*msgTable, error) {
	t := &msgTable{
		byID:   []*msgInfo{nil},
		byKey:  map[string]*msgInfo{},
		byName: map[string]*msgInfo{},
		byType: map[reflect.Type]*msgInfo{},
	}
	add := func(m api.Message) error {
		name, crc := m.GetMessageName(), m.GetCrcString()
		key := name + "_" + crc
		if _, dup := t.byKey[key]; dup {
			return nil
		}
		if prev, dup := t.byName[name]; dup {
			return fmt.Errorf("message %s is defined twice (%s and %s)", name, prev.key, key)
		}
		if len(t.byID) > 0xffff {
			return fmt.Errorf("too many messages for 16-bit IDs at %s", key)
		}
		info := &msgInfo{
			id:   uint16(len(t.byID)),
			name: name,
			crc:  crc,
			key:  key,
			typ:  m.GetMessageType(),
			rt:   reflect.TypeOf(m).Elem(),
		}
		if f, ok := info.rt.FieldByName("Retval"); ok && f.Type.Kind() == reflect.Int32 {
			info.hasRetval = true
		}
		t.byID = append(t.byID, info)
		t.byKey[key] = info
		t.byName[name] = info
		t.byType[info.rt] = info
		return nil
	}

	modules := binapiModules()
	// memclnt in VPP's order, then everything else in module order.
	memclntMsgs := map[string]api.Message{}
	for _, m := range modules[0] {
		memclntMsgs[m.GetMessageName()] = m
	}
	for _, name := range memclntOrder {
		if m, ok := memclntMsgs[name]; ok {
			if err := add(m); err != nil {
				return nil, err
			}
			delete(memclntMsgs, name)
		}
	}
	rest := make([]string, 0, len(memclntMsgs))
	for name := range memclntMsgs {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		if err := add(memclntMsgs[name]); err != nil {
			return nil, err
		}
	}
	for _, mod := range modules[1:] {
		for _, m := range mod {
			if err := add(m); err != nil {
				return nil, err
			}
		}
	}
	// Messages registered by binapi packages linked in by someone else
	// (e.g. a newer copy of a package) are announced as well.
	var extra []api.Message
	for _, msgs := range api.GetRegisteredMessages() {
		for key, m := range msgs {
			if _, ok := t.byKey[key]; !ok {
				extra = append(extra, m)
			}
		}
	}
	sort.Slice(extra, func(i, j int) bool {
		return extra[i].GetMessageName()+extra[i].GetCrcString() < extra[j].GetMessageName()+extra[j].GetCrcString()
	})
	for _, m := range extra {
		if err := add(m); err != nil {
			return nil, err
		}
	}
	if sc := t.byName["sockclnt_create"]; sc == nil || sc.id != sockclntCreateID {
		return nil, fmt.Errorf("sockclnt_create is not message %d", sockclntCreateID)
	}

	// Pair requests with their replies and details by VPP's naming rules.
	for _, info := range t.byID[1:] {
		if !isClientRequest(info) {
			continue
		}
		base := info.name
		switch {
		case strings.HasSuffix(base, "_dump"):
			info.details = t.byName[strings.TrimSuffix(base, "_dump")+"_details"]
		default:
			info.reply = t.byName[base+"_reply"]
			if strings.HasSuffix(base, "_get") {
				info.details = t.byName[strings.TrimSuffix(base, "_get")+"_details"]
			}
		}
	}

	t.entries = make([]memclnt.MessageTableEntry, 0, len(t.byID)-1)
	for _, info := range t.byID[1:] {
		t.entries = append(t.entries, memclnt.MessageTableEntry{Index: info.id, Name: info.key})
	}
	return t, nil
}

// isClientRequest tells whether a client may send the message as a request.
// A few replies and details of VPP carry a client_index and are therefore
// typed as requests by the binapi generator; they are excluded by name.
func isClientRequest(info *msgInfo) bool {
	if info.typ != api.RequestMessage && info.name != "sockclnt_create" {
		return false
	}
	return !strings.HasSuffix(info.name, "_reply") && !strings.HasSuffix(info.name, "_details")
}

// lookupName finds a message by its VPP name, with or without the CRC suffix.
func (t *msgTable) lookupName(name string) *msgInfo {
	if info, ok := t.byName[name]; ok {
		return info
	}
	return t.byKey[name]
}
