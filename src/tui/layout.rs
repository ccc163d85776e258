//! Where each pane goes, as a pure function of the terminal size, so drawing and mouse
//! hit-testing agree; and the scroll offset of a list as a pure function of its selection.

use ratatui::layout::{Constraint, Layout, Rect};

use super::action::Tab;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub queue: Rect,
    pub timeline: Rect,
    pub waiting: Rect,
    pub main: Rect,
    pub footer: Rect,
}

/// The left column's width when nobody chose one and the queue needs no more.
pub fn default_left(width: u16) -> u16 {
    if width >= 120 {
        40
    } else if width >= 100 {
        34
    } else {
        30
    }
}

/// The left column's width on a screen `width` wide: the user's choice (`{` `}` or a
/// drag), else what the queue's names need (`need`), at least the default and at most
/// 40% of the screen; the main pane always keeps 30 columns.
pub fn left_width(width: u16, chosen: Option<u16>, need: u16) -> u16 {
    let most = width.saturating_sub(30).max(MIN_LEFT);
    match chosen {
        Some(w) => w.clamp(MIN_LEFT, most),
        None => need.min(width * 2 / 5).max(default_left(width)).min(most),
    }
}

/// The narrowest the left column gets.
pub const MIN_LEFT: u16 = 20;

/// The panes on a screen of `size`, the left column `left_w` wide and the bottom line
/// `footer_h` high (a long message takes more than one).
pub fn areas(size: (u16, u16), left_w: u16, footer_h: u16) -> Areas {
    let full = Rect::new(0, 0, size.0, size.1);
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(footer_h.max(1)),
    ])
    .areas(full);
    let [left, main] =
        Layout::horizontal([Constraint::Length(left_w), Constraint::Min(20)]).areas(body);
    let timeline_h = (body.height / 3 + 2).clamp(4, 18);
    let waiting_h = (body.height / 4).max(4);
    let [queue, timeline, waiting] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(timeline_h),
        Constraint::Length(waiting_h),
    ])
    .areas(left);
    Areas {
        header,
        queue,
        timeline,
        waiting,
        main,
        footer,
    }
}

/// Rows a bordered list can show, with `header` rows above and `footer` rows below.
pub fn visible_rows(area: Rect, header: u16, footer: u16) -> usize {
    area.height.saturating_sub(2 + header + footer) as usize
}

/// The first row shown: keeps the selection in view, with no state of its own.
pub fn offset(selected: usize, visible: usize) -> usize {
    if visible == 0 {
        return selected;
    }
    (selected + 1).saturating_sub(visible)
}

/// The row index under screen row `y` in a bordered list (`header` rows above the rows).
pub fn row_at(area: Rect, header: u16, footer: u16, y: u16, selected: usize) -> Option<usize> {
    let top = area.y + 1 + header;
    let visible = visible_rows(area, header, footer);
    if y < top || (y - top) as usize >= visible {
        return None;
    }
    Some(offset(selected, visible) + (y - top) as usize)
}

/// The tab titles as drawn on the top border of a main pane `width` wide: every title
/// whole when they fit (padded, else tight), else the shown tab's title and the others'
/// numbers, so every tab stays on screen and clickable (as k9s and lazygit keep theirs).
pub fn tab_labels(width: u16, shown: Tab) -> Vec<String> {
    let room = (width as usize).saturating_sub(2);
    let fits =
        |labels: &[String]| labels.iter().map(|l| l.chars().count() + 1).sum::<usize>() <= room;
    let titled = |pad: &str| -> Vec<String> {
        Tab::ALL
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{pad}{} {}{pad}", i + 1, t.title()))
            .collect()
    };
    for pad in [" ", ""] {
        let labels = titled(pad);
        if fits(&labels) {
            return labels;
        }
    }
    Tab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if *t == shown {
                format!(" {} {} ", i + 1, t.title())
            } else {
                format!(" {} ", i + 1)
            }
        })
        .collect()
}

/// Which tab's title is at column `x` of the main pane's top border.
pub fn tab_at(main: Rect, x: u16, shown: Tab) -> Option<Tab> {
    let mut at = main.x + 1;
    for (label, t) in tab_labels(main.width, shown).iter().zip(Tab::ALL) {
        let w = label.chars().count() as u16;
        if x >= at && x < at + w {
            return Some(t);
        }
        at += w + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_80x24() {
        let a = areas((80, 24), left_width(80, None, 0), 1);
        assert_eq!(a.header.height, 1);
        assert_eq!(a.footer.y, 23);
        assert!(a.queue.height >= 3 && a.waiting.height >= 4);
        assert_eq!(a.main.x, 30);
    }

    #[test]
    fn offsets_and_hits() {
        assert_eq!(offset(3, 10), 0);
        assert_eq!(offset(15, 10), 6);
        let r = Rect::new(0, 0, 20, 12);
        assert_eq!(row_at(r, 0, 0, 1, 0), Some(0));
        assert_eq!(row_at(r, 0, 0, 0, 0), None);
        assert_eq!(row_at(r, 0, 0, 11, 0), None);
        assert_eq!(row_at(r, 0, 0, 5, 15), Some(6 + 4));
        assert_eq!(
            tab_at(Rect::new(30, 1, 50, 10), 32, Tab::Filter),
            Some(Tab::Filter)
        );
    }

    #[test]
    fn every_tab_label_is_on_a_narrow_bar() {
        for width in [40u16, 48, 72, 120] {
            for shown in Tab::ALL {
                let labels = tab_labels(width, shown);
                let used: usize = labels.iter().map(|l| l.chars().count() + 1).sum();
                assert!(used + 2 <= width as usize, "{width}: {labels:?}");
                assert_eq!(labels.len(), Tab::ALL.len());
                let main = Rect::new(10, 1, width, 10);
                let mut x = main.x + 1;
                for (l, t) in labels.iter().zip(Tab::ALL) {
                    assert_eq!(tab_at(main, x, shown), Some(t), "{width} {l}");
                    x += l.chars().count() as u16 + 1;
                }
            }
        }
        assert!(tab_labels(48, Tab::Logs).contains(&" 6 Logs ".to_string()));
        assert!(tab_labels(48, Tab::Logs).contains(&" 1 ".to_string()));
        assert!(tab_labels(72, Tab::Filter).contains(&"7 What-if".to_string()));
        assert!(tab_labels(100, Tab::Filter).contains(&" 7 What-if ".to_string()));
    }

    #[test]
    fn the_left_column_takes_what_the_queue_needs_within_bounds() {
        assert_eq!(left_width(160, None, 0), 40);
        assert_eq!(left_width(160, None, 60), 60);
        assert_eq!(left_width(160, None, 200), 64, "40% at most");
        assert_eq!(left_width(80, None, 60), 32);
        assert_eq!(left_width(80, Some(10), 0), MIN_LEFT);
        assert_eq!(left_width(80, Some(70), 0), 50, "the main pane keeps 30");
    }
}
