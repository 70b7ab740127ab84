//! The scenario catalog (`docs/stsbench.md` §4.2): the 36 scenario types, the five actor roles
//! and which types each role mines, and the short and long descriptions.

use crate::maplayers::Layer;

macro_rules! scenarios {
    ($($v:ident),* $(,)?) => {
        /// A scenario type (`ManeuverType` of the public code).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        pub enum Scenario { $($v),* }
        impl Scenario {
            pub const ALL: &'static [Scenario] = &[$(Scenario::$v),*];
            /// The upper-case name (`LEFT_TURN`).
            pub fn name(self) -> &'static str {
                match self { $(Scenario::$v => stringify!($v)),* }
            }
        }
    };
}

scenarios!(
    ACCELERATE,
    DECELERATE,
    STOP,
    LEFT_TURN,
    RIGHT_TURN,
    U_TURN,
    REVERSE,
    LANE_CHANGE,
    OVERTAKE_AGENT,
    PASS_AGENT,
    FOLLOW_AGENT,
    LEAD_AGENT,
    WAIT_PED_CROSS,
    STATIONARY_BEHIND_AGENT,
    STATIONARY_IN_FRONT_OF_AGENT,
    STATIONARY_LEFT_OF_AGENT,
    STATIONARY_RIGHT_OF_AGENT,
    MOVING_LEFT_OF_AGENT,
    MOVING_RIGHT_OF_AGENT,
    OVERTAKE_EGO,
    PASS_EGO,
    FOLLOW_EGO,
    LEAD_EGO,
    STATIONARY_BEHIND_EGO,
    STATIONARY_IN_FRONT_OF_EGO,
    STATIONARY_LEFT_OF_EGO,
    STATIONARY_RIGHT_OF_EGO,
    MOVING_LEFT_OF_EGO,
    MOVING_RIGHT_OF_EGO,
    CROSS,
    JAYWALK,
    RUN,
    STAND,
    WALK,
    WALK_ALONGSIDE,
    WALK_OPPOSITE,
);

use Scenario::*;

/// Who acts and who is the reference (`docs/stsbench.md` §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// The ego alone.
    Ego,
    /// The ego w.r.t. an agent.
    EgoAgent,
    /// One agent alone.
    Agent,
    /// An agent w.r.t. the ego.
    AgentEgo,
    /// An agent w.r.t. another agent.
    AgentAgent,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Ego,
        Role::EgoAgent,
        Role::Agent,
        Role::AgentEgo,
        Role::AgentAgent,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Ego => "ego",
            Role::EgoAgent => "ego_agent",
            Role::Agent => "agent",
            Role::AgentEgo => "agent_ego",
            Role::AgentAgent => "agent_agent",
        }
    }

    /// The scoring category of the public evaluation: agent-w.r.t.-ego relations are stored
    /// without another agent and so score under `agent`.
    pub fn category(self) -> &'static str {
        match self {
            Role::Ego => "ego",
            Role::EgoAgent => "ego_agent",
            Role::Agent | Role::AgentEgo => "agent",
            Role::AgentAgent => "agent_agent",
        }
    }

    /// The types this role mines (54 combinations in all).
    pub fn scenarios(self) -> &'static [Scenario] {
        match self {
            Role::Ego => &[
                ACCELERATE,
                DECELERATE,
                STOP,
                LEFT_TURN,
                RIGHT_TURN,
                U_TURN,
                REVERSE,
                LANE_CHANGE,
            ],
            Role::EgoAgent => &[
                OVERTAKE_AGENT,
                WAIT_PED_CROSS,
                FOLLOW_AGENT,
                LEAD_AGENT,
                PASS_AGENT,
                STATIONARY_BEHIND_AGENT,
                STATIONARY_IN_FRONT_OF_AGENT,
                STATIONARY_LEFT_OF_AGENT,
                STATIONARY_RIGHT_OF_AGENT,
                MOVING_RIGHT_OF_AGENT,
                MOVING_LEFT_OF_AGENT,
            ],
            Role::Agent => &[
                ACCELERATE,
                STOP,
                LEFT_TURN,
                RIGHT_TURN,
                U_TURN,
                REVERSE,
                LANE_CHANGE,
                CROSS,
                JAYWALK,
                RUN,
                STAND,
                WALK,
            ],
            Role::AgentEgo => &[
                OVERTAKE_EGO,
                PASS_EGO,
                FOLLOW_EGO,
                LEAD_EGO,
                STATIONARY_BEHIND_EGO,
                STATIONARY_IN_FRONT_OF_EGO,
                STATIONARY_RIGHT_OF_EGO,
                STATIONARY_LEFT_OF_EGO,
                MOVING_RIGHT_OF_EGO,
                MOVING_LEFT_OF_EGO,
            ],
            Role::AgentAgent => &[
                OVERTAKE_AGENT,
                PASS_AGENT,
                FOLLOW_AGENT,
                LEAD_AGENT,
                WAIT_PED_CROSS,
                WALK_ALONGSIDE,
                WALK_OPPOSITE,
                STATIONARY_BEHIND_AGENT,
                STATIONARY_IN_FRONT_OF_AGENT,
                STATIONARY_RIGHT_OF_AGENT,
                STATIONARY_LEFT_OF_AGENT,
                MOVING_RIGHT_OF_AGENT,
                MOVING_LEFT_OF_AGENT,
            ],
        }
    }
}

/// The relation kinds shared by the `_AGENT` and `_EGO` families, in a fixed order.
const RELATIONS: [&str; 10] = [
    "OVERTAKE",
    "PASS",
    "FOLLOW",
    "LEAD",
    "STATIONARY_BEHIND",
    "STATIONARY_IN_FRONT_OF",
    "STATIONARY_LEFT_OF",
    "STATIONARY_RIGHT_OF",
    "MOVING_LEFT_OF",
    "MOVING_RIGHT_OF",
];

impl Scenario {
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|x| x.name() == s)
    }

    /// `(relation, is_ego)` for the `_AGENT` / `_EGO` relation types.
    fn relation(self) -> Option<(&'static str, bool)> {
        let n = self.name();
        let (stem, ego) = if let Some(s) = n.strip_suffix("_AGENT") {
            (s, false)
        } else if let Some(s) = n.strip_suffix("_EGO") {
            (s, true)
        } else {
            return None;
        };
        RELATIONS.iter().find(|r| **r == stem).map(|r| (*r, ego))
    }

    /// Whether the scenario involves a second object (the ego counts for `_EGO` types).
    pub(crate) fn is_pair(self) -> bool {
        self.relation().is_some() || matches!(self, WAIT_PED_CROSS | WALK_ALONGSIDE | WALK_OPPOSITE)
    }

    /// Whether the other object of a pair type is the ego.
    pub(crate) fn other_is_ego(self) -> bool {
        self.relation().is_some_and(|(_, ego)| ego)
    }

    /// The map layers the rule reads.
    pub fn layers(self) -> &'static [Layer] {
        match self {
            LANE_CHANGE => &[Layer::Lane],
            WAIT_PED_CROSS | CROSS => &[Layer::PedCrossing],
            JAYWALK => &[Layer::PedCrossing, Layer::DrivableArea],
            WALK => &[Layer::Walkway],
            _ => &[],
        }
    }

    /// The short description with `{actor}` and `{other}` placeholders.
    pub fn short(self) -> &'static str {
        match self {
            ACCELERATE => "{actor} is accelerating",
            DECELERATE => "{actor} is decelerating",
            STOP => "{actor} is stopping",
            LEFT_TURN => "{actor} is turning left",
            RIGHT_TURN => "{actor} is turning right",
            U_TURN => "{actor} is making a U-turn",
            REVERSE => "{actor} is reversing",
            LANE_CHANGE => "{actor} is changing lanes",
            OVERTAKE_AGENT | OVERTAKE_EGO => "{actor} is overtaking {other}",
            PASS_AGENT | PASS_EGO => "{actor} is passing {other}",
            FOLLOW_AGENT | FOLLOW_EGO => "{actor} is following {other}",
            LEAD_AGENT | LEAD_EGO => "{actor} is leading {other}",
            WAIT_PED_CROSS => "{actor} is waiting for {other} to cross",
            STATIONARY_BEHIND_AGENT | STATIONARY_BEHIND_EGO => {
                "{actor} is stationary behind {other}"
            }
            STATIONARY_IN_FRONT_OF_AGENT | STATIONARY_IN_FRONT_OF_EGO => {
                "{actor} is stationary in front of {other}"
            }
            STATIONARY_LEFT_OF_AGENT | STATIONARY_LEFT_OF_EGO => {
                "{actor} is stationary to the left of {other}"
            }
            STATIONARY_RIGHT_OF_AGENT | STATIONARY_RIGHT_OF_EGO => {
                "{actor} is stationary to the right of {other}"
            }
            MOVING_LEFT_OF_AGENT | MOVING_LEFT_OF_EGO => "{actor} is moving to the left of {other}",
            MOVING_RIGHT_OF_AGENT | MOVING_RIGHT_OF_EGO => {
                "{actor} is moving to the right of {other}"
            }
            CROSS => "{actor} is crossing the street",
            JAYWALK => "{actor} is jaywalking",
            RUN => "{actor} is running",
            STAND => "{actor} is standing",
            WALK => "{actor} is walking on the sidewalk",
            WALK_ALONGSIDE => "{actor} is walking alongside {other}",
            WALK_OPPOSITE => "{actor} is walking in the opposite direction to {other}",
        }
    }

    /// The glossary entry shown with the options.
    pub fn long(self) -> &'static str {
        match self {
            ACCELERATE => "the speed rises at every step and by more than 3 m/s over the clip",
            DECELERATE => "the speed falls at every step by more than 3 m/s in all, and the vehicle keeps driving",
            STOP => "the speed falls at every step by more than 3 m/s and the vehicle comes to a standstill",
            LEFT_TURN => "the heading turns left by more than about 45 degrees",
            RIGHT_TURN => "the heading turns right by more than about 45 degrees",
            U_TURN => "the heading reverses by more than about 97 degrees",
            REVERSE => "the vehicle moves backwards, against the direction it faces",
            LANE_CHANGE => "the vehicle crosses a lane boundary into a neighbouring lane",
            OVERTAKE_AGENT | OVERTAKE_EGO => "both are moving in the same direction; the first is behind the second at the start and ahead of it at the end",
            PASS_AGENT | PASS_EGO => "the first moves past the second, which stands still, from behind it to ahead of it",
            FOLLOW_AGENT | FOLLOW_EGO => "both drive at similar speeds in the same lane, the first behind the second",
            LEAD_AGENT | LEAD_EGO => "both drive at similar speeds in the same lane, the first ahead of the second",
            WAIT_PED_CROSS => "the vehicle stands still near a pedestrian on a crosswalk",
            STATIONARY_BEHIND_AGENT | STATIONARY_BEHIND_EGO => "both stand still, the first directly behind the second",
            STATIONARY_IN_FRONT_OF_AGENT | STATIONARY_IN_FRONT_OF_EGO => "both stand still, the first directly in front of the second",
            STATIONARY_LEFT_OF_AGENT | STATIONARY_LEFT_OF_EGO => "both stand still side by side, the first on the left",
            STATIONARY_RIGHT_OF_AGENT | STATIONARY_RIGHT_OF_EGO => "both stand still side by side, the first on the right",
            MOVING_LEFT_OF_AGENT | MOVING_LEFT_OF_EGO => "both move side by side in the same direction, the first on the left",
            MOVING_RIGHT_OF_AGENT | MOVING_RIGHT_OF_EGO => "both move side by side in the same direction, the first on the right",
            CROSS => "the pedestrian walks across the road on a crosswalk",
            JAYWALK => "the pedestrian walks on the road away from any crosswalk",
            RUN => "the pedestrian moves faster than 2.5 m/s",
            STAND => "the pedestrian does not move",
            WALK => "the pedestrian walks at normal pace on the sidewalk",
            WALK_ALONGSIDE => "two pedestrians walk next to each other in the same direction",
            WALK_OPPOSITE => "two pedestrians walk past each other in opposite directions",
        }
    }
}
