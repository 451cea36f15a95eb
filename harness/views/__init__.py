"""Views: read stored result records and write tables, pages and charts; they never run a submission."""
