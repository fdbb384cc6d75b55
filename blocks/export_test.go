package blocks

// Internals the external tests check directly.
var (
	CountBlocks  = countBlocks
	LargestState = largestState
)
