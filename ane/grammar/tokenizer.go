package grammar

import "github.com/forgedaemon/forged/ane/text/tokenizer"

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
