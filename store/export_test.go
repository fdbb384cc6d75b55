package store

// WithFields sets raw request hash fields on ch, for tests that need a
// record in a state only a long history reaches (a delivery on its last
// retry). Production code says what changes with Change's typed fields.
func (ch *Change) WithFields(set map[string]any) *Change {
	ch.set = set
	return ch
}
