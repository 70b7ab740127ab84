//! The 30 MetaVQA question types (`docs/metavqa.md` §5): 24 spatial, 5 embodied, 1 grounding.

use serde::Serialize;

/// A question type; [`QuestionType::name`] is its `question_type` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum QuestionType {
    IdentifyColor,
    IdentifyType,
    IdentifyDistance,
    IdentifyPosition,
    IdentifyHeading,
    PickCloser,
    RelativeDistance,
    RelativePosition,
    RelativeHeading,
    RelativePredictCrashStill,
    RelativePredictCrashDynamic,
    PredictCrashEgoStill,
    PredictCrashEgoDynamic,
    OrderClosest,
    OrderLeftmost,
    OrderRightmost,
    OrderFrontmost,
    OrderBackmost,
    IdentifyClosest,
    IdentifyLeftmost,
    IdentifyRightmost,
    IdentifyFrontmost,
    IdentifyBackmost,
    DescribeSector,
    DescribeDistance,
    DescribeScenario,
    EmbodiedDistance,
    EmbodiedSideness,
    EmbodiedCollision,
    Grounding,
}

/// The paper's three super-categories.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Super {
    Spatial,
    Embodied,
    Grounding,
}

use QuestionType as Q;

impl QuestionType {
    pub const ALL: [QuestionType; 30] = [
        Q::IdentifyColor,
        Q::IdentifyType,
        Q::IdentifyDistance,
        Q::IdentifyPosition,
        Q::IdentifyHeading,
        Q::PickCloser,
        Q::RelativeDistance,
        Q::RelativePosition,
        Q::RelativeHeading,
        Q::RelativePredictCrashStill,
        Q::RelativePredictCrashDynamic,
        Q::PredictCrashEgoStill,
        Q::PredictCrashEgoDynamic,
        Q::OrderClosest,
        Q::OrderLeftmost,
        Q::OrderRightmost,
        Q::OrderFrontmost,
        Q::OrderBackmost,
        Q::IdentifyClosest,
        Q::IdentifyLeftmost,
        Q::IdentifyRightmost,
        Q::IdentifyFrontmost,
        Q::IdentifyBackmost,
        Q::DescribeSector,
        Q::DescribeDistance,
        Q::DescribeScenario,
        Q::EmbodiedDistance,
        Q::EmbodiedSideness,
        Q::EmbodiedCollision,
        Q::Grounding,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Q::IdentifyColor => "identify_color",
            Q::IdentifyType => "identify_type",
            Q::IdentifyDistance => "identify_distance",
            Q::IdentifyPosition => "identify_position",
            Q::IdentifyHeading => "identify_heading",
            Q::PickCloser => "pick_closer",
            Q::RelativeDistance => "relative_distance",
            Q::RelativePosition => "relative_position",
            Q::RelativeHeading => "relative_heading",
            Q::RelativePredictCrashStill => "relative_predict_crash_still",
            Q::RelativePredictCrashDynamic => "relative_predict_crash_dynamic",
            Q::PredictCrashEgoStill => "predict_crash_ego_still",
            Q::PredictCrashEgoDynamic => "predict_crash_ego_dynamic",
            Q::OrderClosest => "order_closest",
            Q::OrderLeftmost => "order_leftmost",
            Q::OrderRightmost => "order_rightmost",
            Q::OrderFrontmost => "order_frontmost",
            Q::OrderBackmost => "order_backmost",
            Q::IdentifyClosest => "identify_closest",
            Q::IdentifyLeftmost => "identify_leftmost",
            Q::IdentifyRightmost => "identify_rightmost",
            Q::IdentifyFrontmost => "identify_frontmost",
            Q::IdentifyBackmost => "identify_backmost",
            Q::DescribeSector => "describe_sector",
            Q::DescribeDistance => "describe_distance",
            Q::DescribeScenario => "describe_scenario",
            Q::EmbodiedDistance => "embodied_distance",
            Q::EmbodiedSideness => "embodied_sideness",
            Q::EmbodiedCollision => "embodied_collision",
            Q::Grounding => "grounding",
        }
    }

    pub fn parse(s: &str) -> Option<QuestionType> {
        Q::ALL.into_iter().find(|t| t.name() == s)
    }

    #[cfg(test)]
    pub(crate) fn super_category(self) -> Super {
        match self {
            Q::PredictCrashEgoStill
            | Q::PredictCrashEgoDynamic
            | Q::EmbodiedDistance
            | Q::EmbodiedSideness
            | Q::EmbodiedCollision => Super::Embodied,
            Q::Grounding => Super::Grounding,
            _ => Super::Spatial,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_four_five_one() {
        let count = |s: Super| {
            QuestionType::ALL
                .iter()
                .filter(|t| t.super_category() == s)
                .count()
        };
        assert_eq!(count(Super::Spatial), 24);
        assert_eq!(count(Super::Embodied), 5);
        assert_eq!(count(Super::Grounding), 1);
        for t in QuestionType::ALL {
            assert_eq!(QuestionType::parse(t.name()), Some(t));
        }
    }
}
