package store

// Page selects one page of a list: Page counts from 1, PerPage is 1 to 100.
type Page struct {
	Page    int
	PerPage int
}

// Offset is the number of rows before the page.
func (p Page) Offset() int { return (p.Page - 1) * p.PerPage }

// capacity is room for the rows of the page, for a slice to read them into.
func (p Page) capacity() int { return min(max(p.PerPage, 0), 100) }
