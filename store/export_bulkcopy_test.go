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

// CreatedDetails is the JSON of a contact.created activity's details.
func CreatedDetails(c Contact, lists []int64) []byte { return createdDetails(c, lists) }

// TextArray exposes textArray.
var TextArray = textArray
