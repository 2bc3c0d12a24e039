package sample

import "strings"

// dryBreakerChars are what make a token a DRY sequence breaker in the
// published server: a newline (spelled "Ċ" in byte-level BPE vocabularies),
// ':', '"' or '*'.
const dryBreakerChars = "Ċ\n:\"*"

// DRYBreakers lists the token ids among 0..vocab−1 whose vocabulary
// spelling (token returns it, false for unused ids) contains a breaker
// character, for DRY.Breakers.
func DRYBreakers(vocab int, token func(id int) (string, bool)) []int {
	var ids []int
	for id := range vocab {
		if s, ok := token(id); ok && strings.ContainsAny(s, dryBreakerChars) {
			ids = append(ids, id)
		}
	}
	return ids
}
