//! Actions: everything that can change the app. Keys, mouse, ticks, the command line
//! and the background worker's results become actions; `App::update` is the only place
//! that applies them.

use std::time::Duration;

/// The panes that can hold the focus, declared by the registry in `components/panes.rs`.
pub use super::components::panes::Pane;

/// The tabs of the main pane, declared by the registry in `components/tabs.rs`.
pub use super::components::tabs::Tab;

/// A key-bindable command. The names are what the config file's `[keys]` table uses.
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
    Allow,
    AllowAll,
    Reject,
    WhatIfToggle,
    WeightUp,
    WeightDown,
    WhatIfRun,
    WhatIfField,
    WhatIfUndo,
    Cancel,
    /// Shows a tab (one command per tab of the registry, named by the tab).
    ShowTab(Tab),
    PaneNarrower,
    PaneWider,
    JumpNode,
}

/// The commands listed before the tabs' in `Command::ALL` (and so in help).
const BEFORE_TABS: [Command; 41] = [
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
    Command::Allow,
    Command::AllowAll,
    Command::Reject,
    Command::WhatIfToggle,
    Command::WeightUp,
    Command::WeightDown,
    Command::WhatIfRun,
    Command::WhatIfField,
    Command::WhatIfUndo,
    Command::Cancel,
];

/// The commands listed after the tabs'.
const AFTER_TABS: [Command; 3] = [Command::PaneNarrower, Command::PaneWider, Command::JumpNode];

impl Command {
    /// Every command: those before the tabs', one per tab in tab-bar order, the rest.
    pub const ALL: [Command; BEFORE_TABS.len() + Tab::ALL.len() + AFTER_TABS.len()] = {
        let mut all = [Command::Step; BEFORE_TABS.len() + Tab::ALL.len() + AFTER_TABS.len()];
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
        all
    };

    /// The groups help shows, in order (by pane, as k9s does).
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
            Allow | AllowAll | Reject => "Waiting at Permit",
            WhatIfToggle | WeightUp | WeightDown | WhatIfRun | WhatIfField | WhatIfUndo => {
                "What-if tab"
            }
            ShowTab(_) => "Tabs",
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
            Command::Allow => ("allow", "allow the selected waiting pod for this plugin"),
            Command::AllowAll => (
                "allow-all",
                "allow the selected waiting pod for every plugin",
            ),
            Command::Reject => ("reject", "reject the selected waiting pod (asks a message)"),
            Command::WhatIfToggle => ("what-if-toggle", "what-if: enable / disable the plugin"),
            Command::WeightUp => ("weight-up", "what-if: raise the score weight"),
            Command::WeightDown => ("weight-down", "what-if: lower the score weight"),
            Command::WhatIfRun => (
                "what-if-run",
                "what-if: re-run the pod with both configurations",
            ),
            Command::WhatIfField => (
                "what-if-edit",
                "what-if: edit a pod or node field (requests, toleration, nodeSelector, labels, taints, allocatable)",
            ),
            Command::WhatIfUndo => ("what-if-undo", "what-if: undo the last field edit"),
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
            Allow => &["approve", "permit", "accept"],
            AllowAll => &["approve all", "permit all"],
            Reject => &["deny", "refuse", "decline"],
            WhatIfToggle => &["disable", "enable"],
            WeightUp | WeightDown => &["priority", "importance"],
            WhatIfRun => &["simulate", "compare"],
            WhatIfField => &["modify", "change"],
            WhatIfUndo => &["revert"],
            Cancel => &["escape", "close", "dismiss"],
            ShowTab(_) => &[],
            PaneNarrower | PaneWider => &["resize", "width"],
            JumpNode => &["goto node", "bound node"],
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
    /// The background worker's explanation of a pod (see `explaining`).
    Explained(Box<crate::components::explain::worker::ExplainDone>),
    /// The background worker's what-if comparison (see `whatif_actions`).
    Compared(Box<crate::components::whatif::actions::CompareDone>),
}
