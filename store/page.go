package store

// MaxPage is the highest page of any list. It keeps the offset (page−1 × up to 100
// rows) far inside int64 and PostgreSQL's OFFSET, whatever a client sends; the API
// answers a higher page with 422, the portal shows this one.
const MaxPage = 1_000_000

// Page selects one page of a list: Page counts from 1 to MaxPage, PerPage is 1 to 100.
type Page struct {
	Page    int
	PerPage int
}

// Offset is the number of rows before the page. A page outside 1 to MaxPage
// counts as the nearest of them, so no caller can make the offset overflow.
func (p Page) Offset() int { return (min(max(p.Page, 1), MaxPage) - 1) * max(p.PerPage, 0) }

// capacity is room for the rows of the page, for a slice to read them into.
func (p Page) capacity() int { return min(max(p.PerPage, 0), 100) }
