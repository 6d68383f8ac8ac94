//! A small terminal emulator for the bash tool's output: renders what a person would see after the command
//! finished (`\r` progress bars collapsed, backspaces applied, cursor moves and line/screen erases honoured,
//! colours dropped). Cursor positions are capped so hostile sequences cannot allocate huge screens.

/// Largest row/column a cursor sequence may reach beyond existing content.
const MAX_CURSOR_POSITION: usize = 5000;

struct Screen {
    lines: Vec<Vec<char>>,
    row: usize,
    col: usize,
}

impl Screen {
    fn ensure_row(&mut self) {
        while self.lines.len() <= self.row {
            self.lines.push(Vec::new());
        }
    }

    fn put(&mut self, c: char) {
        self.ensure_row();
        let line = &mut self.lines[self.row];
        if self.col < line.len() {
            line[self.col] = c;
        } else {
            line.resize(self.col, ' ');
            line.push(c);
        }
        self.col += 1;
    }

    fn clamp_row(&self, r: usize) -> usize {
        r.min(self.lines.len() + MAX_CURSOR_POSITION)
    }

    fn erase_line(&mut self, mode: usize) {
        self.ensure_row();
        let col = self.col;
        let line = &mut self.lines[self.row];
        match mode {
            0 => line.truncate(col),
            1 => {
                for c in line.iter_mut().take(col + 1) {
                    *c = ' ';
                }
            }
            _ => line.clear(),
        }
    }

    fn erase_display(&mut self, mode: usize) {
        match mode {
            0 => {
                self.erase_line(0);
                self.lines.truncate(self.row + 1);
            }
            1 => {
                for l in self.lines.iter_mut().take(self.row) {
                    l.clear();
                }
                self.erase_line(1);
            }
            _ => {
                for l in self.lines.iter_mut() {
                    l.clear();
                }
            }
        }
    }

    fn csi(&mut self, params: &str, cmd: char) {
        let nums: Vec<Option<usize>> = params.split(';').map(|p| p.parse::<usize>().ok()).collect();
        let n = |i: usize, default: usize| {
            nums.get(i)
                .copied()
                .flatten()
                .filter(|v| *v > 0)
                .unwrap_or(default)
        };
        let n0 = |i: usize| nums.get(i).copied().flatten().unwrap_or(0);
        let cap = MAX_CURSOR_POSITION;
        match cmd {
            'A' => self.row = self.row.saturating_sub(n(0, 1).min(cap)),
            'B' => self.row = self.clamp_row(self.row + n(0, 1).min(cap)),
            'C' => self.col = (self.col + n(0, 1).min(cap)).min(cap),
            'D' => self.col = self.col.saturating_sub(n(0, 1).min(cap)),
            'E' => {
                self.row = self.clamp_row(self.row + n(0, 1).min(cap));
                self.col = 0;
            }
            'F' => {
                self.row = self.row.saturating_sub(n(0, 1).min(cap));
                self.col = 0;
            }
            'G' | '`' => self.col = n(0, 1).min(cap) - 1,
            'd' => self.row = self.clamp_row(n(0, 1).min(cap) - 1),
            'H' | 'f' => {
                self.row = self.clamp_row(n(0, 1).min(cap) - 1);
                self.col = n(1, 1).min(cap) - 1;
            }
            'K' => self.erase_line(n0(0)),
            'J' => self.erase_display(n0(0)),
            _ => {} // colours (m) and everything else: no visible effect
        }
    }

    fn render(self) -> String {
        let mut out = String::new();
        for (i, line) in self.lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.extend(line.iter());
        }
        out
    }
}

/// Render raw command output the way a terminal would display it.
pub fn render_terminal_output(raw: &str) -> String {
    if raw.is_empty() {
        return String::new();
    }
    // Fast path: plain text needs no emulation.
    if !raw
        .chars()
        .any(|c| (c < ' ' && c != '\n' && c != '\t') || c == '\u{7f}' || c == '\u{9b}')
    {
        return raw.to_string();
    }
    let mut s = Screen {
        lines: vec![Vec::new()],
        row: 0,
        col: 0,
    };
    let chars: Vec<char> = raw.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                s.row = s.clamp_row(s.row + 1);
                s.col = 0;
                s.ensure_row();
            }
            '\r' => s.col = 0,
            '\u{8}' => s.col = s.col.saturating_sub(1),
            '\x1b' => {
                match chars.get(i + 1) {
                    Some('[') => {
                        let mut j = i + 2;
                        let mut params = String::new();
                        while j < chars.len() && ('\x20'..='\x3f').contains(&chars[j]) {
                            params.push(chars[j]);
                            j += 1;
                        }
                        if let Some(&cmd) = chars.get(j) {
                            if !params.starts_with('?') {
                                s.csi(&params, cmd);
                            }
                            i = j;
                        } else {
                            i = chars.len();
                        }
                    }
                    Some(']') => {
                        // OSC: skip to BEL or ST.
                        let mut j = i + 2;
                        while j < chars.len()
                            && chars[j] != '\x07'
                            && !(chars[j] == '\x1b' && chars.get(j + 1) == Some(&'\\'))
                        {
                            j += 1;
                        }
                        i = if j < chars.len() && chars[j] == '\x1b' {
                            j + 1
                        } else {
                            j
                        };
                    }
                    // Charset designations and similar take one more character (`ESC ( B` from `tput sgr0`).
                    Some(c) if "()*+-./#%".contains(*c) => i += 2,
                    Some(_) => i += 1,
                    None => {}
                }
            }
            '\t' => s.put('\t'),
            c if c < ' ' || c == '\u{7f}' || c == '\u{9b}' => {}
            c => s.put(c),
        }
        i += 1;
    }
    s.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bars_collapse() {
        assert_eq!(
            render_terminal_output("Progress: 0%\rProgress: 50%\rProgress: 100%"),
            "Progress: 100%"
        );
        assert_eq!(
            render_terminal_output(
                "Starting download...\nProgress: 0%\rProgress: 50%\rProgress: 100%\nDone!"
            ),
            "Starting download...\nProgress: 100%\nDone!"
        );
    }

    #[test]
    fn backspace_cursor_and_erase() {
        assert_eq!(render_terminal_output("abc\u{8}\u{8}d"), "adc");
        let up = render_terminal_output("Line 1\nLine 2\x1b[AOverwritten");
        assert!(up.contains("Overwritten") && up.contains("Line 2"));
        let erased = render_terminal_output("Old content\x1b[2KNew content");
        assert!(erased.contains("New content") && !erased.contains("Old content"));
        let cleared = render_terminal_output("old text\x1b[2Jnew text");
        assert!(cleared.contains("new text") && !cleared.contains("old text"));
    }

    #[test]
    fn colours_stripped_and_plain_text_unchanged() {
        assert_eq!(
            render_terminal_output("\x1b[31merror\x1b[0m: something failed"),
            "error: something failed"
        );
        let plain = "Hello, world!\nThis is a test.\nLine 3.\n";
        assert_eq!(render_terminal_output(plain), plain);
        assert_eq!(
            render_terminal_output("Line 1\r\nLine 2\r\nLine 3"),
            "Line 1\nLine 2\nLine 3"
        );
        assert_eq!(render_terminal_output(""), "");
        assert_eq!(
            render_terminal_output("\x1b[1mbold\x1b(B\x1b[m done\x1b]0;title\x07"),
            "bold done"
        );
    }

    #[test]
    fn hostile_positions_are_capped() {
        let out = render_terminal_output("hello\x1b[9999999;9999999Hworld");
        assert!(out.contains("world"));
        assert!(out.len() < 20_000);
        let many = "\x1b[5000B".repeat(1000) + "x";
        assert!(render_terminal_output(&many).len() < 100_000);
    }
}
