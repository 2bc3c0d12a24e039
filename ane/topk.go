package ane

import "sort"

// Scored is a token id with its logit.
type Scored struct {
	ID    int     `json:"id"`
	Logit float32 `json:"logit"`
}

// TopK returns the k highest logits, highest first (ties: lower id first).
// NaN logits are never selected.
func TopK(logits []float32, k int) []Scored {
	k = min(k, len(logits))
	if k <= 0 {
		return nil
	}
	better := func(a, b Scored) bool { return a.Logit > b.Logit || (a.Logit == b.Logit && a.ID < b.ID) }
	top := make([]Scored, 0, k)
	for id, v := range logits {
		if v != v {
			continue
		}
		c := Scored{id, v}
		if len(top) == k {
			if !better(c, top[k-1]) {
				continue
			}
			top = top[:k-1]
		}
		i := sort.Search(len(top), func(i int) bool { return better(c, top[i]) })
		top = append(top, Scored{})
		copy(top[i+1:], top[i:])
		top[i] = c
	}
	return top
}
