package wire

// Token operations: the bearer tokens of the HTTP API's loopback TCP
// listener (docs/HTTP.md). Admin ops; the token itself is in
// TokenCreateResult only, once.
const (
	OpTokenCreate = "token.create"
	OpTokenList   = "token.list"
	OpTokenRevoke = "token.revoke"
)

// TokenCreateArgs names the app the new token identifies.
type TokenCreateArgs struct {
	App string `msgpack:"app" json:"app"`
}

// TokenInfo is a token's record (never the token).
type TokenInfo struct {
	ID        string `msgpack:"id" json:"id"`
	App       string `msgpack:"app" json:"app"`
	CreatedMS int64  `msgpack:"created_ms" json:"created_ms"`
	CreatedBy uint32 `msgpack:"created_by" json:"created_by"`
}

// TokenCreateResult is the new token, shown this once, and its record.
type TokenCreateResult struct {
	Token     string `msgpack:"token" json:"token"`
	ID        string `msgpack:"id" json:"id"`
	App       string `msgpack:"app" json:"app"`
	CreatedMS int64  `msgpack:"created_ms" json:"created_ms"`
}

// TokenListResult lists every token's record, oldest first.
type TokenListResult struct {
	Tokens []TokenInfo `msgpack:"tokens" json:"tokens"`
}

// TokenRevokeArgs names the token to revoke.
type TokenRevokeArgs struct {
	ID string `msgpack:"id" json:"id"`
}
