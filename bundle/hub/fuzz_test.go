package hub

import (
	"net/http"
	"strconv"
	"testing"
)

// FuzzResponseHeaders feeds hostile Content-Range and hub metadata headers
// to the parsers a download trusts before keeping any byte.
func FuzzResponseHeaders(f *testing.F) {
	f.Add("bytes 100-199/1000", "1000", `"`+"ab"+`"`, "")
	f.Add("bytes */1000", "-1", `W/"x"`, "0123456789012345678901234567890123456789")
	f.Add("bytes 9223372036854775807-1/2", "99999999999999999999", "", "")
	f.Fuzz(func(t *testing.T, contentRange, linkedSize, linkedEtag, repoCommit string) {
		if n, ok := contentRangeStart(contentRange); ok {
			// Whatever parses must be the leading number of the header.
			if got, _ := contentRangeStart("bytes " + strconv.FormatInt(n, 10) + "-"); got != n {
				t.Fatalf("%q parsed as %d, which does not round-trip", contentRange, n)
			}
		}
		d := Download{Path: "p", Commit: "c", Size: 1000, SHA256: "s"}
		h := http.Header{}
		h.Set("X-Linked-Size", linkedSize)
		h.Set("X-Linked-Etag", linkedEtag)
		h.Set("X-Repo-Commit", repoCommit)
		err := checkHeaders(d, h)
		if err == nil && linkedSize != "" && linkedSize != "1000" {
			if n, perr := strconv.ParseInt(linkedSize, 10, 64); perr != nil || n != 1000 {
				t.Fatalf("X-Linked-Size %q accepted for a 1000-byte file", linkedSize)
			}
		}
		if err == nil && repoCommit != "" && repoCommit != "c" {
			t.Fatalf("X-Repo-Commit %q accepted for commit c", repoCommit)
		}
	})
}
