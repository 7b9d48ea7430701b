package store

// SetMinCopyRows sets the fewest new contacts or events a batch writes by
// COPY (tests compare the COPY path with the INSERT path) and returns the
// function that restores the setting.
func SetMinCopyRows(n int) (restore func()) {
	old := minCopyRows.Swap(int64(n))
	return func() { minCopyRows.Store(old) }
}

// CopiedContacts is how many new contacts this process wrote by COPY.
func CopiedContacts() int64 { return copiedContacts.Load() }

// PlainDecimal exposes plainDecimal.
var PlainDecimal = plainDecimal
