//! Actions: everything that can change the app. Keys, mouse, ticks, the command line
//! and the background worker's results become actions; `App::update` is the only place
//! that applies them.

use std::time::Duration;

/// The panes that can hold the focus, declared by the registry in `components/panes.rs`.
pub use super::components::panes::Pane;

/// The tabs of the main pane, declared by the registry in `components/tabs.rs`.
pub use super::components::tabs::Tab;

/// A command a pane or a tab declares itself (`PaneComponent::COMMANDS`,
/// `TabPane::COMMANDS`), whole: no other file names it. Commands are the same when
/// their names are.
#[derive(Debug, Clone, Copy)]
pub struct OwnCommand {
    /// The name in the config file's `[keys]` table.
    pub name: &'static str,
    /// What help says it does.
    pub help: &'static str,
    /// The help group it is listed under (one of `Command::GROUPS`, or a new one).
    pub group: &'static str,
    /// Its default keys.
    pub keys: &'static [&'static str],
    /// Other words help's search finds it by.
    pub synonyms: &'static [&'static str],
}

impl PartialEq for OwnCommand {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for OwnCommand {}

impl std::hash::Hash for OwnCommand {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name.hash(h)
    }
}

impl PartialOrd for OwnCommand {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OwnCommand {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name.cmp(other.name)
    }
}

/// The own commands of the panes and then the tabs, in registry order.
const OWN: [&[&[OwnCommand]]; 2] = [
    super::components::panes::COMMANDS,
    super::components::tabs::COMMANDS,
];

/// How many own commands the registries declare.
const fn own_count() -> usize {
    let mut n = 0;
    let mut r = 0;
    while r < OWN.len() {
        let mut i = 0;
        while i < OWN[r].len() {
            n += OWN[r][i].len();
            i += 1;
        }
        r += 1;
    }
    n
}

/// A key-bindable command. The names are what the config file's `[keys]` table uses.
/// The app's own and those several panes and tabs share are variants; a pane's or a
/// tab's own is `Own`, declared by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    Step,
    StepPlugin,
    FinishPod,
    ContinuePause,
    Sprint,
    Breakpoint,
    Breakpoints,
    Back,
    Forward,
    Live,
    JumpPod,
    SpeedUp,
    SpeedDown,
    CommandLine,
    Copy,
    Help,
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    ColumnLeft,
    ColumnRight,
    FocusNext,
    FocusPrev,
    Select,
    Filter,
    Sort,
    ScoreView,
    Cancel,
    /// Shows a tab (one command per tab of the registry, named by the tab).
    ShowTab(Tab),
    PaneNarrower,
    PaneWider,
    JumpNode,
    /// A pane's or a tab's own command.
    Own(&'static OwnCommand),
}

/// The commands listed before the tabs' in `Command::ALL` (and so in help).
const BEFORE_TABS: [Command; 32] = [
    Command::Step,
    Command::StepPlugin,
    Command::FinishPod,
    Command::ContinuePause,
    Command::Sprint,
    Command::Breakpoint,
    Command::Breakpoints,
    Command::Back,
    Command::Forward,
    Command::Live,
    Command::JumpPod,
    Command::SpeedUp,
    Command::SpeedDown,
    Command::CommandLine,
    Command::Copy,
    Command::Help,
    Command::Quit,
    Command::Up,
    Command::Down,
    Command::PageUp,
    Command::PageDown,
    Command::Top,
    Command::Bottom,
    Command::ColumnLeft,
    Command::ColumnRight,
    Command::FocusNext,
    Command::FocusPrev,
    Command::Select,
    Command::Filter,
    Command::Sort,
    Command::ScoreView,
    Command::Cancel,
];

/// How many commands there are (`Command::ALL`).
const ALL_LEN: usize = BEFORE_TABS.len() + Tab::ALL.len() + AFTER_TABS.len() + own_count();

/// The commands listed after the tabs'.
const AFTER_TABS: [Command; 3] = [Command::PaneNarrower, Command::PaneWider, Command::JumpNode];

impl Command {
    /// Every command: those before the tabs', one per tab in tab-bar order, the rest,
    /// then the panes' and the tabs' own, in registry order.
    pub const ALL: [Command; ALL_LEN] = {
        let mut all = [Command::Step; ALL_LEN];
        let mut i = 0;
        while i < BEFORE_TABS.len() {
            all[i] = BEFORE_TABS[i];
            i += 1;
        }
        let mut t = 0;
        while t < Tab::ALL.len() {
            all[i] = Command::ShowTab(Tab::ALL[t]);
            i += 1;
            t += 1;
        }
        let mut j = 0;
        while j < AFTER_TABS.len() {
            all[i] = AFTER_TABS[j];
            i += 1;
            j += 1;
        }
        let mut r = 0;
        while r < OWN.len() {
            let mut p = 0;
            while p < OWN[r].len() {
                let mut k = 0;
                while k < OWN[r][p].len() {
                    all[i] = Command::Own(&OWN[r][p][k]);
                    i += 1;
                    k += 1;
                }
                p += 1;
            }
            r += 1;
        }
        all
    };

    /// Help's groups: `GROUPS`, and before the tabs' any new group a pane's or a tab's
    /// own commands name.
    pub fn groups() -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Command::GROUPS.to_vec();
        for c in Command::ALL {
            let g = c.group();
            if !out.contains(&g) {
                out.insert(out.len() - 1, g);
            }
        }
        out
    }

    /// The groups help shows, in order (by pane, as k9s does); the Waiting pane's and
    /// the What-if tab's commands name theirs.
    pub const GROUPS: [&'static str; 9] = [
        "General",
        "Stepping",
        "Time travel",
        "Moving",
        "Queue and Filter tab",
        "Filter and Score tabs",
        "Waiting at Permit",
        "What-if tab",
        "Tabs",
    ];

    /// Which of `GROUPS` help lists the command under.
    pub fn group(self) -> &'static str {
        use Command::*;
        match self {
            Help | Quit | CommandLine | Copy | Cancel | FocusNext | FocusPrev | PaneNarrower
            | PaneWider => "General",
            Step | StepPlugin | FinishPod | ContinuePause | Sprint | SpeedUp | SpeedDown
            | Breakpoint | Breakpoints => "Stepping",
            Back | Forward | Live => "Time travel",
            Up | Down | PageUp | PageDown | Top | Bottom | Select => "Moving",
            Filter | Sort | JumpPod => "Queue and Filter tab",
            ColumnLeft | ColumnRight | ScoreView | JumpNode => "Filter and Score tabs",
            ShowTab(_) => "Tabs",
            Own(o) => o.group,
        }
    }

    /// The name used in the config file.
    pub fn name(self) -> &'static str {
        self.info().0
    }

    /// What help shows.
    pub fn describe(self) -> &'static str {
        self.info().1
    }

    fn info(self) -> (&'static str, &'static str) {
        match self {
            Command::Step => ("step", "step: finish the current extension point"),
            Command::StepPlugin => ("step-plugin", "step one plugin"),
            Command::FinishPod => ("finish", "finish the current pod's attempt"),
            Command::ContinuePause => ("continue", "continue / pause"),
            Command::Sprint => (
                "sprint",
                "run to the next breakpoint or the end at full speed",
            ),
            Command::Breakpoint => (
                "breakpoint",
                "toggle a breakpoint on the selected point, plugin or pod",
            ),
            Command::Breakpoints => ("breakpoints", "list breakpoints"),
            Command::Back => ("back", "time travel: one step back"),
            Command::Forward => ("forward", "time travel: one step forward"),
            Command::Live => ("live", "back to the present"),
            Command::JumpPod => ("jump-pod", "jump to a pod"),
            Command::SpeedUp => ("speed-up", "faster replay"),
            Command::SpeedDown => ("speed-down", "slower replay"),
            Command::CommandLine => ("command", "command line (step, break, allow, show ...)"),
            Command::Copy => ("copy", "copy the explanation (OSC 52)"),
            Command::Help => ("help", "this help"),
            Command::Quit => ("quit", "quit"),
            Command::Up => ("up", "move up"),
            Command::Down => ("down", "move down"),
            Command::PageUp => ("page-up", "page up"),
            Command::PageDown => ("page-down", "page down"),
            Command::Top => ("top", "first row"),
            Command::Bottom => ("bottom", "last row"),
            Command::ColumnLeft => ("column-left", "previous column (matrix, scores)"),
            Command::ColumnRight => ("column-right", "next column (matrix, scores)"),
            Command::FocusNext => ("focus-next", "focus the next pane"),
            Command::FocusPrev => ("focus-prev", "focus the previous pane"),
            Command::Select => (
                "select",
                "focus the selected pod / open the selected node or tree entry",
            ),
            Command::Filter => (
                "filter",
                "filter rows: pods in the queue, nodes in the Filter tab (fuzzy name; ! rejected, !PLUGIN rejected by it, + examined by upstream's search), keys in help",
            ),
            Command::Sort => (
                "sort",
                "sort: pods by queue, name, attempts; nodes examined, rejected first, by the selected plugin, passing, name",
            ),
            Command::ScoreView => ("score-view", "scores: raw / normalized / weighted"),
            Command::Cancel => ("cancel", "close a popup / clear the filter"),
            Command::ShowTab(t) => (t.info().command, t.info().help),
            Command::PaneNarrower => (
                "pane-narrower",
                "narrower left panes (queue, cycle, waiting); the mouse drags the border too",
            ),
            Command::PaneWider => ("pane-wider", "wider left panes (queue, cycle, waiting)"),
            Command::JumpNode => (
                "jump-node",
                "Filter / Score: jump to the node the pod was bound to (or kubestep picked)",
            ),
            Command::Own(o) => (o.name, o.help),
        }
    }

    /// Other words people look for the command by (help's search matches them): the
    /// names k9s, lazygit, vim and debuggers use for the same thing.
    pub fn synonyms(self) -> &'static [&'static str] {
        use Command::*;
        match self {
            Step => &["next"],
            StepPlugin => &["next plugin", "step into"],
            FinishPod => &["complete", "step out"],
            ContinuePause => &["run", "go", "play", "resume"],
            Sprint => &["fast forward", "run to end"],
            Breakpoint => &["break", "stop at"],
            Breakpoints => &["list breaks"],
            Back => &["rewind", "history", "previous", "undo step"],
            Forward => &["history", "redo step"],
            Live => &["now", "present", "latest"],
            JumpPod => &["goto", "find pod"],
            SpeedUp => &["faster"],
            SpeedDown => &["slower"],
            CommandLine => &["ex", "script", "colon"],
            Copy => &["yank", "clipboard"],
            Help => &["keys", "bindings"],
            Quit => &["exit"],
            Up | Down | PageUp | PageDown => &["scroll"],
            Top => &["first", "beginning"],
            Bottom => &["last", "follow"],
            ColumnLeft | ColumnRight => &["sideways", "horizontal"],
            FocusNext | FocusPrev => &["switch pane", "window"],
            Select => &["open", "expand", "collapse"],
            Filter => &["search", "find", "grep"],
            Sort => &["order"],
            ScoreView => &["normalize"],
            Cancel => &["escape", "close", "dismiss"],
            ShowTab(_) => &[],
            PaneNarrower | PaneWider => &["resize", "width"],
            JumpNode => &["goto node", "bound node"],
            Own(o) => o.synonyms,
        }
    }

    pub fn from_name(s: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// Anything `App::update` accepts.
#[derive(Debug, Clone)]
pub enum Action {
    Command(Command),
    /// A character typed into a prompt (command line, filter, reject message).
    Input(char),
    Backspace,
    Submit,
    /// Time passing in the real world (drives replay and countdowns).
    Tick(Duration),
    /// A mouse click at a screen position (column, row).
    Click(u16, u16),
    /// The mouse moved with the left button down (column, row).
    Drag(u16, u16),
    /// The left button went up.
    Release,
    ScrollUp(u16, u16),
    ScrollDown(u16, u16),
    Resize(u16, u16),
    /// The background worker's explanation of a pod (see `components::tabs::explain::worker`).
    Explained(Box<crate::components::tabs::explain::worker::ExplainDone>),
    /// The background worker's what-if comparison (see `components::tabs::whatif::actions`).
    Compared(Box<crate::components::tabs::whatif::actions::CompareDone>),
}
