package vppcalls

import "testing"

func TestMessagesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Messages() {
		id := m.GetMessageName() + "_" + m.GetCrcString()
		if seen[id] {
			t.Errorf("message %s listed twice", id)
		}
		seen[id] = true
	}
	if len(seen) == 0 {
		t.Error("no messages registered")
	}
}
