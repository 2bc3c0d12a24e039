package state

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// With 500k sessions open (2,000 uids at the per-uid cap of 250), status's
// list stays bounded: at most StatusSessions entries, the caller's own
// first, the rest the smallest ids, with the total beside them, and its
// encoding far below the 16 MiB reply limit. Before, status listed every
// session and answered too_large.
func TestStatusSessionsBounded(t *testing.T) {
	const uids, each = 2000, 250
	tab := NewSessions(SessionLimits{PerConnection: each, PerUID: each})
	var mine *Owner
	for u := range uids {
		o := tab.Join(uint32(1000 + u))
		o.SetClient("app")
		for range each {
			if _, err := tab.Open(o); err != nil {
				t.Fatal(err)
			}
		}
		if u == uids-1 {
			mine = o
		}
	}
	list, total := tab.Infos(mine.uid, StatusSessions)
	if total != uids*each {
		t.Fatalf("total %d, want %d", total, uids*each)
	}
	if len(list) != StatusSessions {
		t.Fatalf("%d listed, want %d", len(list), StatusSessions)
	}
	for i, s := range list[:each] {
		if s.UID != mine.uid {
			t.Fatalf("entry %d is uid %d: the caller's own %d sessions must come first", i, s.UID, each)
		}
	}
	if list[each].Session != "s1" || list[each+1].Session != "s2" {
		t.Fatalf("after the caller's own: %s, %s; want the smallest ids s1, s2", list[each].Session, list[each+1].Session)
	}
	for i := each + 1; i < len(list); i++ {
		if CompareIDs(list[i-1].Session, list[i].Session) >= 0 {
			t.Fatalf("not in id order at %d: %s, %s", i, list[i-1].Session, list[i].Session)
		}
	}
	b, err := msgpack.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1<<20 {
		t.Fatalf("the session list encodes to %d bytes", len(b))
	}
	t.Logf("500k sessions: status lists %d (%d bytes encoded), total %d", len(list), len(b), total)
	if _, err := tab.Open(mine); err == nil {
		t.Fatal("a session past the per-uid cap was opened")
	}
	if n, ofUID := tab.Count(mine.uid); n != uids*each || ofUID != each {
		t.Fatalf("Count = %d, %d", n, ofUID)
	}
	tab.Leave(mine)
	if n, ofUID := tab.Count(mine.uid); n != (uids-1)*each || ofUID != 0 {
		t.Fatalf("after leave: Count = %d, %d", n, ofUID)
	}
}
