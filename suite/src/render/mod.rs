//! One document, three renderers: what `diff`, `history` and `bisect` print.
//!
//! A command builds a [`Doc`] — headings, paragraphs, lists, tables whose
//! cells carry a [`Mark`], unified diffs, collapsible details — and hands it
//! to [`text`], [`markdown`] or [`html`]. A renderer knows how its format
//! escapes and aligns; a command knows only what it has to say, so a new
//! view is a new builder rather than a new set of `format!` calls per
//! format. JSON is not a rendering: the commands serialize their own types.

pub mod html;
pub mod markdown;
pub mod text;

/// The output formats every view renders to, plus the command's own JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned text for a terminal (coloured there)
    Text,
    /// GitHub Markdown (a pull request, a CI step summary)
    Md,
    /// One JSON document (the command's schema)
    Json,
    /// One self-contained HTML page
    Html,
}

/// A whole document: a title (the HTML page's) and its blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Doc {
    /// The page title (HTML only; the others start with their first block).
    pub title: String,
    /// The blocks, in order.
    pub blocks: Vec<Block>,
}

impl Doc {
    /// An empty document titled `title`.
    pub fn new(title: impl Into<String>) -> Doc {
        Doc {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    /// Appends a block.
    pub fn push(&mut self, block: Block) -> &mut Doc {
        self.blocks.push(block);
        self
    }

    /// Appends a heading.
    pub fn heading(&mut self, level: u8, text: impl Into<Text>) -> &mut Doc {
        self.push(Block::Heading(level, text.into()))
    }

    /// Appends a paragraph.
    pub fn para(&mut self, text: impl Into<Text>) -> &mut Doc {
        self.push(Block::Para(text.into()))
    }
}

/// How a span or a cell stands out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mark {
    /// As it is.
    #[default]
    Plain,
    /// Differs from what it is compared with (yellow; bold elsewhere).
    Changed,
    /// Holds, passes (green).
    Good,
    /// Fails, regressed (red; bold elsewhere).
    Bad,
    /// Not there (dimmed).
    Missing,
    /// Secondary (dimmed).
    Muted,
    /// Emphasis without a verdict (bold).
    Strong,
    /// Code: a name, a command (backticks, `<code>`).
    Code,
    /// Code that links to the section of the same name (a probe's).
    Ref,
    /// A short mark in the page's own class `class`, its meaning `title`
    /// on hover (HTML; as it is elsewhere).
    Badge {
        /// The HTML class.
        class: &'static str,
        /// The hover text; empty for none.
        title: &'static str,
    },
    /// A long name that may wrap after each `-` (HTML; as it is elsewhere).
    Breakable,
}

/// A run of text with one mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The text, unescaped.
    pub text: String,
    /// How it stands out.
    pub mark: Mark,
}

/// Inline text: spans in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(pub Vec<Span>);

impl Text {
    /// Plain text.
    pub fn plain(s: impl Into<String>) -> Text {
        Text::default().with(Mark::Plain, s)
    }

    /// Code.
    pub fn code(s: impl Into<String>) -> Text {
        Text::default().with(Mark::Code, s)
    }

    /// Prose whose `backticked` parts are code.
    pub fn prose(s: &str) -> Text {
        Text::default().then_prose(s)
    }

    /// Appends prose whose `backticked` parts are code.
    pub fn then_prose(mut self, s: &str) -> Text {
        for (i, part) in s.split('`').enumerate().filter(|(_, p)| !p.is_empty()) {
            self = self.with([Mark::Plain, Mark::Code][i % 2], part);
        }
        self
    }

    /// Text with one mark.
    pub fn marked(mark: Mark, s: impl Into<String>) -> Text {
        Text::default().with(mark, s)
    }

    /// Appends a span.
    pub fn with(mut self, mark: Mark, s: impl Into<String>) -> Text {
        self.0.push(Span {
            text: s.into(),
            mark,
        });
        self
    }

    /// Appends plain text.
    pub fn then(self, s: impl Into<String>) -> Text {
        self.with(Mark::Plain, s)
    }

    /// The text without marks.
    pub fn raw(&self) -> String {
        self.0.iter().map(|s| s.text.as_str()).collect()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::plain(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::plain(s)
    }
}

/// A column's alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Names.
    Left,
    /// Figures.
    Right,
}

/// One table cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Its content.
    pub text: Text,
    /// The cell's verdict (its background in HTML, its colour in text).
    pub mark: Mark,
    /// What the cell says on hover (HTML; empty for nothing).
    pub title: String,
    /// Blocks after its text, folded details (HTML only).
    pub blocks: Vec<Block>,
    /// The rows it spans, 1 and up (HTML only: the rows it covers below
    /// it carry one cell fewer).
    pub rows: usize,
}

impl Cell {
    /// A cell of `text` marked `mark`.
    pub fn new(text: impl Into<Text>, mark: Mark) -> Cell {
        Cell {
            text: text.into(),
            mark,
            title: String::new(),
            blocks: Vec::new(),
            rows: 1,
        }
    }
}

/// A table: columns (title and alignment), then rows of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Titles and alignments.
    pub columns: Vec<(Text, Align)>,
    /// One cell per column each.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A probes-down table: a left-aligned `probe` column (each row's
    /// first half), then `columns`, right-aligned.
    pub fn probes_down(
        columns: impl IntoIterator<Item = Text>,
        rows: impl IntoIterator<Item = (Text, Vec<Cell>)>,
    ) -> Table {
        Table {
            columns: std::iter::once(("probe".into(), Align::Left))
                .chain(columns.into_iter().map(|c| (c, Align::Right)))
                .collect(),
            rows: rows
                .into_iter()
                .map(|(probe, cells)| {
                    std::iter::once(Cell::new(probe, Mark::Plain))
                        .chain(cells)
                        .collect()
                })
                .collect(),
        }
    }
}

/// One block of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A heading, level 1 to 3.
    Heading(u8, Text),
    /// A paragraph.
    Para(Text),
    /// A bulleted list.
    List(Vec<Text>),
    /// A table.
    Table(Table),
    /// A block of code or preformatted text (`asm`, `text`).
    Code {
        /// The language a Markdown fence names.
        lang: &'static str,
        /// The text, unescaped.
        text: String,
    },
    /// A unified diff under a title.
    Diff {
        /// What is compared (`hot path`).
        title: String,
        /// The unified diff text.
        text: String,
    },
    /// Blocks folded under a summary line.
    Details {
        /// The always-visible line.
        summary: Text,
        /// The folded blocks.
        blocks: Vec<Block>,
    },
}

/// A unified diff line's kind: added, removed, a hunk header, or context.
pub(crate) fn diff_line_mark(line: &str) -> Mark {
    if line.starts_with('+') && !line.starts_with("+++") {
        Mark::Good
    } else if line.starts_with('-') && !line.starts_with("---") {
        Mark::Bad
    } else if line.starts_with("@@") {
        Mark::Code
    } else {
        Mark::Plain
    }
}

/// Renders `doc` in `format` (`Json` is the command's own; it renders as
/// Markdown here).
pub fn render(doc: &Doc, format: OutputFormat, color: bool) -> String {
    match format {
        OutputFormat::Text => text::render(doc, color),
        OutputFormat::Md | OutputFormat::Json => markdown::render(doc),
        OutputFormat::Html => html::render(doc),
    }
}

#[cfg(test)]
mod tests;
