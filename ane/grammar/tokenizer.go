package grammar

import (
	"sync"

	"github.com/forgedaemon/forged/ane/text/tokenizer"
)

// TokenizerVocab is the vocabulary of tok: every token's bytes, special
// tokens left out (a grammar never produces them).
func TokenizerVocab(tok *tokenizer.Tokenizer) *Vocab {
	toks := make([][]byte, tok.VocabSize())
	for id := range toks {
		if !tok.IsSpecial(id) {
			toks[id], _ = tok.TokenBytes(id)
		}
	}
	return NewVocab(toks)
}

var vocabs sync.Map // *tokenizer.Tokenizer → *Vocab

// VocabFor is TokenizerVocab(tok), built once per tokenizer (the trie of a
// 151k vocabulary takes a noticeable fraction of a second).
func VocabFor(tok *tokenizer.Tokenizer) *Vocab {
	if v, ok := vocabs.Load(tok); ok {
		return v.(*Vocab)
	}
	v, _ := vocabs.LoadOrStore(tok, TokenizerVocab(tok))
	return v.(*Vocab)
}
